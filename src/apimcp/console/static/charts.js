// Charts drawn as SVG, without a library: bars of calls (errors stacked on top) and lines of latency over a
// window's series. Every number is set through setAttribute on elements made with createElementNS: no markup is
// parsed, no style attribute is written (the strict CSP allows neither), colours come from the style sheet.
// Each chart is an image with a text alternative; the same figures are in a table below it for screen readers.

const SVG = "http://www.w3.org/2000/svg";
const WIDTH = 600;
const HEIGHT = 160;
const LEFT = 44;
const BOTTOM = 20;

function svg(tag, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

function clock(seconds) {
  return new Date(seconds * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

/** A round upper bound for an axis: 1, 2 or 5 times a power of ten, at least `value`. */
export function roundUp(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

function frame(label, top, series, unit) {
  const plotWidth = WIDTH - LEFT;
  const plotHeight = HEIGHT - BOTTOM;
  const first = series.length ? series[0].t : 0;
  const last = series.length ? series[series.length - 1].t : 0;
  return svg("svg", { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, class: "chart", role: "img", "aria-label": label },
    svg("title", {}, label),
    svg("line", { x1: LEFT, y1: plotHeight, x2: WIDTH, y2: plotHeight, class: "axis" }),
    svg("line", { x1: LEFT, y1: 0, x2: LEFT, y2: plotHeight, class: "axis" }),
    svg("text", { x: LEFT - 4, y: 10, class: "tick", "text-anchor": "end" }, `${top}${unit}`),
    svg("text", { x: LEFT - 4, y: plotHeight, class: "tick", "text-anchor": "end" }, `0${unit}`),
    svg("text", { x: LEFT, y: HEIGHT - 4, class: "tick" }, series.length ? clock(first) : ""),
    svg("text", { x: WIDTH, y: HEIGHT - 4, class: "tick", "text-anchor": "end" }, series.length ? clock(last) : ""),
    svg("g", { class: "plot" }));
}

/** Bars of calls per step, the part that failed in the error colour. */
export function callBars(label, series) {
  const top = roundUp(Math.max(0, ...series.map((point) => point.calls)));
  const chart = frame(label, top, series, "");
  const plot = chart.querySelector("g.plot");
  const slot = (WIDTH - LEFT) / Math.max(series.length, 1);
  const scale = (HEIGHT - BOTTOM) / top;
  series.forEach((point, index) => {
    if (!point.calls) return;
    const x = LEFT + index * slot + slot * 0.1;
    const width = Math.max(slot * 0.8, 1);
    const good = (point.calls - point.errors) * scale;
    const bad = point.errors * scale;
    const base = HEIGHT - BOTTOM;
    if (good > 0) plot.append(svg("rect", { x, y: base - good, width, height: good, class: "bar" }));
    if (bad > 0) plot.append(svg("rect", { x, y: base - good - bad, width, height: bad, class: "bar failed" }));
  });
  return chart;
}

/** Lines of latency quantiles per step (`keys`: the series' fields, each with the class of its line). */
export function latencyLines(label, series, keys) {
  const values = series.flatMap((point) => keys.map(([key]) => point[key])).filter((value) => typeof value === "number");
  const top = roundUp(Math.max(0, ...values));
  const chart = frame(label, top, series, " ms");
  const plot = chart.querySelector("g.plot");
  const slot = (WIDTH - LEFT) / Math.max(series.length, 1);
  const scale = (HEIGHT - BOTTOM) / top;
  for (const [key, kind] of keys) {
    let points = [];
    const flush = () => {
      if (points.length === 1) {
        const [x, y] = points[0].split(",");
        plot.append(svg("circle", { cx: x, cy: y, r: 2.5, class: `dot ${kind}` }));
      } else if (points.length > 1) {
        plot.append(svg("polyline", { points: points.join(" "), class: `line ${kind}` }));
      }
      points = [];
    };
    series.forEach((point, index) => {
      const value = point[key];
      if (typeof value !== "number") {
        flush();  // no request in that step: a gap, not a fall to zero
        return;
      }
      const x = (LEFT + index * slot + slot / 2).toFixed(1);
      const y = (HEIGHT - BOTTOM - value * scale).toFixed(1);
      points.push(`${x},${y}`);
    });
    flush();
  }
  return chart;
}
