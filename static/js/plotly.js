// plotly.js, loaded on first use (the timings' plots): it is big, and most visits never need it.

import { assetUrl } from "./api.js";
import { h } from "./dom.js";

let plotly = null;

export function loadPlotly() {
  plotly ??= new Promise((resolve, reject) => {
    const script = h("script", { src: assetUrl("vendor/plotly.min.js") });
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => reject(new Error("could not load plotly.js"));
    document.head.append(script);
  });
  return plotly;
}
