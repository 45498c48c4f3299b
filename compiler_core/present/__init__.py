"""Presentation: graph layout and views, timing figures, and the static HTML report. Reads
results; nothing below it imports it."""
