// plotly.js with the traces static/js draws: scatter and scattergl (graph views, roofline), bar
// (the timings' kernel bars), as the gl2d bundle plus bar (static/vendor/plotly.min.js).
var Plotly = require("plotly.js/lib/core");

Plotly.register([
  require("plotly.js/lib/bar"),
  require("plotly.js/lib/scattergl"),
  require("plotly.js/lib/splom"),
  require("plotly.js/lib/parcoords"),
  require("plotly.js/lib/calendars"),
]);

module.exports = Plotly;
