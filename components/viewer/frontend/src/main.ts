// Casebook's reading viewer: Cornerstone3D stack viewports inside a Streamlit component.
//
// The server sends each pane's frames as raw little-endian pixels (modality units: HU for CT)
// through the session's websocket; every frame becomes a cached Cornerstone image at once,
// so scrolling, windowing, panning and zooming never wait for the server. Up to two panes:
// the current image and a second one (a prior or a similar case), linked when asked.

import {
  Enums as CoreEnums,
  RenderingEngine,
  cache,
  eventTarget,
  imageLoader,
  init as coreInit,
  metaData,
  setUseCPURendering,
  utilities as csUtils,
} from "@cornerstonejs/core";
import * as cst from "@cornerstonejs/tools";
import { onRender, setFrameHeight, setValue, type RenderArgs } from "./protocol";
import { orientationLetters } from "./orientation";

type PaneMeta = {
  key: string;
  series_id: number;
  label: string;
  caption: string;
  rows: number;
  cols: number;
  frames: number;
  dtype: "int16" | "float32" | "uint8";
  colour: boolean;
  modality: string;
  spacing: [number, number] | null;
  orientation: number[] | null;
  window: { center: number; width: number } | null;
  start: number;
};

// Where the doctor is in a pane: kept when the component draws its panes again (a second pane
// opened or closed reruns the page with new arguments), keyed by the pane and its series.
type Place = { index: number; voi: { lower: number; upper: number } | null; zoom: number; pan: [number, number] };

type Pane = {
  meta: PaneMeta;
  viewportId: string;
  element: HTMLDivElement;
  imageIds: string[];
  overlay: Record<string, HTMLElement>;
  slider: HTMLInputElement;
  data?: Int16Array | Float32Array | Uint8Array;
  // the window shown. Cornerstone's CPU stack path resets getProperties().voiRange to the image's own
  // window on every new slice while it keeps drawing the old one: that value must not be trusted
  voi?: { lower: number; upper: number };
};

const ENGINE_ID = "casebook-engine";
const GROUP_ID = "casebook-tools";
const PRESETS: Record<string, [number, number]> = {
  lung: [-600, 1500],
  mediastinum: [50, 350],
  bone: [400, 1800],
  brain: [40, 80],
  abdomen: [40, 400],
};
const DRAG_TOOLS: Record<string, { tool: string; label: string; key: string }> = {
  wl: { tool: cst.WindowLevelTool.toolName, label: "Window", key: "w" },
  pan: { tool: cst.PanTool.toolName, label: "Pan", key: "p" },
  zoom: { tool: cst.ZoomTool.toolName, label: "Zoom", key: "z" },
  scroll: { tool: cst.StackScrollTool.toolName, label: "Scroll", key: "s" },
  length: { tool: cst.LengthTool.toolName, label: "Length", key: "l" },
  probe: { tool: cst.ProbeTool.toolName, label: "HU probe", key: "h" },
  roi: { tool: cst.RectangleROITool.toolName, label: "ROI", key: "r" },
};

const meta = new Map<string, Record<string, unknown>>();
let engine: RenderingEngine | null = null;
let group: any = null;
let panes: Pane[] = [];
let activeDrag = "wl";
let linked = true;
let cineOn = false;
let syncing = false;
const places = new Map<string, Place>();
const stats = { renders: 0, lastRender: 0, lastPaint: 0, lastInput: 0 };
(window as any).casebookViewer = {
  stats,
  panes: () => panes.map((p) => p.meta.key),
  annotations: () => cst.annotation.state.getAllAnnotations().map((a: any) => ({
    tool: a.metadata?.toolName, stats: a.data?.cachedStats,
  })),
  rois: () => rois(),
};

async function setUp(): Promise<void> {
  setUseCPURendering(true); // stacks of 2-D slices: fast on the CPU, and no GPU needed (VMs, CI)
  await coreInit();
  cst.init();
  metaData.addProvider((type: string, imageId: string) => meta.get(imageId)?.[type], 10000);
  for (const tool of [
    cst.WindowLevelTool, cst.PanTool, cst.ZoomTool, cst.StackScrollTool,
    cst.LengthTool, cst.ProbeTool, cst.RectangleROITool,
  ]) cst.addTool(tool);
  engine = new RenderingEngine(ENGINE_ID);
  group = cst.ToolGroupManager.createToolGroup(GROUP_ID);
  for (const t of Object.values(DRAG_TOOLS)) group.addTool(t.tool);
  const B = cst.Enums.MouseBindings;
  group.setToolActive(cst.StackScrollTool.toolName, { bindings: [{ mouseButton: B.Wheel }] });
  group.setToolActive(cst.PanTool.toolName, { bindings: [{ mouseButton: B.Auxiliary }] });
  group.setToolActive(cst.ZoomTool.toolName, { bindings: [{ mouseButton: B.Secondary }] });
  group.setToolActive(cst.WindowLevelTool.toolName, { bindings: [{ mouseButton: B.Primary }] });
  const E = cst.Enums.Events;
  for (const ev of [E.ANNOTATION_COMPLETED, E.ANNOTATION_MODIFIED, E.ANNOTATION_REMOVED]) {
    eventTarget.addEventListener(ev, () => window.setTimeout(showMeasurements, 0));
  }
  document.addEventListener("keydown", onKey);
}

function bytesOf(arg: unknown): Uint8Array {
  if (arg instanceof Uint8Array) return arg;
  if (arg instanceof ArrayBuffer) return new Uint8Array(arg);
  throw new Error("pixels missing");
}

function typed(m: PaneMeta, raw: Uint8Array): Int16Array | Float32Array | Uint8Array {
  const buf = raw.slice().buffer; // aligned copy: the message's bytes may start at an odd offset
  if (m.dtype === "int16") return new Int16Array(buf);
  if (m.dtype === "float32") return new Float32Array(buf);
  return new Uint8Array(buf);
}

function makeImages(p: Pane, raw: Uint8Array): string[] {
  const m = p.meta;
  const data = (p.data = typed(m, raw));
  const per = m.rows * m.cols * (m.colour ? 3 : 1);
  const ids: string[] = [];
  const [rowSp, colSp] = m.spacing ?? [1, 1];
  for (let f = 0; f < m.frames; f++) {
    const id = `casebook:${m.series_id}:${f}`;
    ids.push(id);
    meta.set(id, {
      generalSeriesModule: { modality: m.modality },
      modalityLutModule: { rescaleSlope: 1, rescaleIntercept: 0 },
      ...(m.window ? { voiLutModule: { windowCenter: [m.window.center], windowWidth: [m.window.width] } } : {}),
    });
    if (cache.getImageLoadObject(id)) continue;
    const image: any = imageLoader.createAndCacheLocalImage(id, {
      scalarData: data.subarray(f * per, (f + 1) * per) as any,
      dimensions: [m.cols, m.rows],
      spacing: [colSp, rowSp],
      direction: (m.orientation ?? [1, 0, 0, 0, 1, 0]) as any,
      origin: [0, 0, 0] as any, // a stack: each image is its own plane (the probe reads index k = 0)
      frameOfReferenceUID: `casebook-${m.series_id}`,
    } as any);
    // the image's own default window: what Cornerstone falls back to when it recomputes the VOI
    image.windowCenter = m.window ? m.window.center : 127.5;
    image.windowWidth = m.window ? m.window.width : 256;
  }
  return ids;
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls: string, text = ""): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = cls;
  if (text) node.textContent = text;
  return node;
}

function button(label: string, title: string, onClick: () => void, testid: string): HTMLButtonElement {
  const b = el("button", "tb", label);
  b.type = "button";
  b.title = title;
  b.setAttribute("aria-label", title);
  b.dataset.testid = testid;
  b.addEventListener("click", onClick);
  return b;
}

function buildToolbar(root: HTMLElement, grey: boolean, multiFrame: boolean): void {
  const bar = el("div", "toolbar");
  bar.setAttribute("role", "toolbar");
  bar.setAttribute("aria-label", "Viewer tools");
  for (const [id, t] of Object.entries(DRAG_TOOLS)) {
    const b = button(t.label, `${t.label} (left drag) · key ${t.key.toUpperCase()}`, () => setDragTool(id), `tool-${id}`);
    b.setAttribute("aria-pressed", String(id === activeDrag));
    bar.append(b);
  }
  if (grey) {
    bar.append(el("span", "sep", "|"));
    Object.keys(PRESETS).forEach((name, i) => {
      bar.append(button(name, `${name} window · key ${i + 1}`, () => preset(name), `preset-${name}`));
    });
  }
  bar.append(el("span", "sep", "|"));
  const cine = button("▶ Cine", "Play or stop cine · key C", toggleCine, "cine");
  cine.disabled = !multiFrame;
  bar.append(cine);
  bar.append(button("Reset", "Reset view and window · key 0", reset, "reset"));
  if (panes.length > 1 || root.dataset.two === "1") {
    const b = button("Linked", "Link scrolling and window of both panes · key K", toggleLink, "link");
    b.setAttribute("aria-pressed", String(linked));
    bar.append(b);
  }
  root.append(bar);
}

function buildPane(row: HTMLElement, m: PaneMeta, index: number): Pane {
  const box = el("div", "pane");
  // Cornerstone's key listener on the image cancels every key, Tab included (a keyboard trap):
  // Tab stops here, before it reaches the image, so focus moves on to the page
  box.addEventListener("keydown", (e) => e.key === "Tab" && e.stopPropagation(), { capture: true });
  const element = el("div", "viewport");
  element.tabIndex = 0;
  element.setAttribute("role", "group");
  element.setAttribute("aria-roledescription", "image viewer");
  element.setAttribute("aria-label", `${m.label}: arrow keys scroll slices`);
  element.dataset.testid = `viewport-${m.key}`;
  element.addEventListener("contextmenu", (e) => e.preventDefault());
  element.addEventListener("wheel", () => (stats.lastInput = performance.now()), { capture: true, passive: true });
  element.addEventListener("pointerdown", () => (stats.lastInput = performance.now()), { capture: true });
  element.addEventListener("pointermove", (e) => e.buttons && (stats.lastInput = performance.now()), { capture: true });
  const overlay: Record<string, HTMLElement> = {};
  for (const pos of ["tl", "tr", "bl", "br", "top", "bottom", "left", "right"]) {
    overlay[pos] = el("div", `ov ov-${pos}`);
    overlay[pos].setAttribute("aria-hidden", pos.length > 2 ? "true" : "false");
    element.append(overlay[pos]);
  }
  overlay.tl.textContent = m.caption;
  const slider = el("input", "slice");
  slider.type = "range";
  slider.min = "1";
  slider.max = String(m.frames);
  slider.value = String(m.start + 1);
  slider.tabIndex = -1; // the viewport itself takes the arrow keys: one tab stop per pane
  slider.setAttribute("aria-label", `${m.label} slice`);
  slider.hidden = m.frames < 2;
  slider.addEventListener("input", () => scrollTo(panes[index], Number(slider.value) - 1));
  box.append(element, slider);
  row.append(box);
  return { meta: m, viewportId: `vp-${m.key}`, element, imageIds: [], overlay, slider };
}

function viewportOf(p: Pane): any {
  return engine!.getViewport(p.viewportId);
}

function updateOverlay(p: Pane): void {
  const vp = viewportOf(p);
  if (!vp) return;
  const i = vp.getCurrentImageIdIndex();
  const n = p.imageIds.length;
  const voi = windowOf(p);
  const wl = voi && !p.meta.colour
    ? `W ${Math.round(voi.upper - voi.lower)} / L ${Math.round((voi.upper + voi.lower) / 2)}`
    : "colour";
  p.overlay.br.textContent = `${n > 1 ? `slice ${i + 1}/${n} · ` : ""}${wl}`;
  const zoom = vp.getZoom ? vp.getZoom() : 1;
  p.overlay.bl.textContent = `zoom ${zoom.toFixed(2)}×`;
  p.element.dataset.slice = String(i + 1);
  p.element.dataset.window = wl;
  p.element.dataset.zoom = zoom.toFixed(3);
  const pan = vp.getPan ? vp.getPan() : [0, 0];
  p.element.dataset.pan = `${Math.round(pan[0])},${Math.round(pan[1])}`;
  p.slider.value = String(i + 1);
  p.element.setAttribute("aria-label", `${p.meta.label}: slice ${i + 1} of ${n}, ${wl}. Arrow keys scroll.`);
}

function scrollTo(p: Pane, index: number): void {
  const vp = viewportOf(p);
  const n = p.imageIds.length;
  const i = Math.min(Math.max(index, 0), n - 1);
  if (vp.getCurrentImageIdIndex() !== i) vp.setImageIdIndex(i);
}

function follow(source: Pane, kind: "slice" | "voi"): void {
  if (!linked || syncing || panes.length < 2) return;
  syncing = true;
  try {
    const vp = viewportOf(source);
    for (const other of panes) {
      if (other === source) continue;
      if (kind === "slice") {
        const rel = vp.getCurrentImageIdIndex() / Math.max(source.imageIds.length - 1, 1);
        scrollTo(other, Math.round(rel * (other.imageIds.length - 1)));
      } else if (sameScale(source, other) && windowOf(source)) {
        const ov = viewportOf(other);
        ov.setProperties({ voiRange: { ...windowOf(source)! } });
        ov.render();
      }
    }
  } finally {
    syncing = false;
  }
}

// a window means the same in both panes: grey images of one modality (HU for CT)
function sameScale(a: Pane, b: Pane): boolean {
  return !a.meta.colour && !b.meta.colour && a.meta.modality === b.meta.modality;
}

function windowOf(p: Pane): { lower: number; upper: number } | undefined {
  return p.voi ?? viewportOf(p)?.getProperties().voiRange;
}

// a new slice: Cornerstone's own VOI state back to the window shown (the window tool starts its drag from it)
function keepWindow(p: Pane): void {
  const r = viewportOf(p).getProperties().voiRange;
  if (p.voi && !p.meta.colour && (!r || r.lower !== p.voi.lower || r.upper !== p.voi.upper)) {
    viewportOf(p).setProperties({ voiRange: { ...p.voi } });
  }
}

function placeKey(p: Pane): string {
  return `${p.meta.key}:${p.meta.series_id}`;
}

function placeOf(p: Pane): Place {
  const vp = viewportOf(p);
  const voi = windowOf(p);
  return {
    index: vp.getCurrentImageIdIndex(),
    voi: voi && !p.meta.colour ? { lower: voi.lower, upper: voi.upper } : null,
    zoom: vp.getZoom ? vp.getZoom() : 1,
    pan: [...vp.getPan()] as [number, number],
  };
}

function setDragTool(id: string): void {
  const prev = DRAG_TOOLS[activeDrag].tool;
  const next = DRAG_TOOLS[id].tool;
  if (prev === next) return;
  // passive drops only the left button: the mouse defaults (wheel scroll, middle pan, right zoom) stay
  group.setToolPassive(prev);
  group.setToolActive(next, { bindings: [{ mouseButton: cst.Enums.MouseBindings.Primary }] });
  activeDrag = id;
  document.querySelectorAll<HTMLButtonElement>(".toolbar .tb").forEach((b) => {
    if (b.dataset.testid?.startsWith("tool-")) b.setAttribute("aria-pressed", String(b.dataset.testid === `tool-${id}`));
  });
}

function preset(name: string): void {
  const [c, w] = PRESETS[name];
  for (const p of panes) {
    if (p.meta.colour || (!linked && p !== panes[0])) continue;
    const vp = viewportOf(p);
    vp.setProperties({ voiRange: { lower: c - w / 2, upper: c + w / 2 } });
    vp.render();
  }
}

function reset(): void {
  for (const p of panes) {
    const vp = viewportOf(p);
    vp.resetCamera();
    if (p.meta.window && !p.meta.colour) {
      const { center: c, width: w } = p.meta.window;
      vp.setProperties({ voiRange: { lower: c - w / 2, upper: c + w / 2 } });
    } else vp.resetProperties();
    vp.render();
  }
}

function toggleCine(): void {
  const p = panes[0];
  if (!p || p.imageIds.length < 2) return;
  cineOn = !cineOn;
  if (cineOn) cst.utilities.cine.playClip(p.element, { framesPerSecond: 10, loop: true });
  else cst.utilities.cine.stopClip(p.element);
  const b = document.querySelector<HTMLButtonElement>("[data-testid='cine']");
  if (b) {
    b.textContent = cineOn ? "■ Stop" : "▶ Cine";
    b.setAttribute("aria-pressed", String(cineOn));
  }
  document.body.dataset.cine = cineOn ? "playing" : "stopped";
}

function toggleLink(): void {
  linked = !linked;
  document.querySelector("[data-testid='link']")?.setAttribute("aria-pressed", String(linked));
}

function onKey(e: KeyboardEvent): void {
  if (e.ctrlKey || e.metaKey || e.altKey) return;
  const t = performance.now();
  const focused = panes.find((p) => p.element === document.activeElement) ?? panes[0];
  if (!focused) return;
  const k = e.key.toLowerCase();
  const i = viewportOf(focused).getCurrentImageIdIndex();
  const step: Record<string, number> = { arrowup: -1, arrowleft: -1, arrowdown: 1, arrowright: 1, pageup: -10, pagedown: 10 };
  if (k in step) scrollTo(focused, i + step[k]);
  else if (k === "home") scrollTo(focused, 0);
  else if (k === "end") scrollTo(focused, focused.imageIds.length - 1);
  else if (k >= "1" && k <= "5") preset(Object.keys(PRESETS)[Number(k) - 1]);
  else if (k === "0") reset();
  else if (k === "c") toggleCine();
  else if (k === "k") toggleLink();
  else {
    const tool = Object.entries(DRAG_TOOLS).find(([, t]) => t.key === k);
    if (!tool) return;
    setDragTool(tool[0]);
  }
  stats.lastInput = t;
  e.preventDefault();
}

function showMeasurements(): void {
  const list = document.getElementById("measurements");
  if (!list) return;
  const rows: string[] = [];
  for (const name of [cst.LengthTool.toolName, cst.ProbeTool.toolName, cst.RectangleROITool.toolName]) {
    for (const a of cst.annotation.state.getAllAnnotations().filter((x: any) => x.metadata?.toolName === name)) {
      const [target, stat]: [string, any] = Object.entries((a as any).data?.cachedStats ?? {})[0] ?? ["", null];
      if (!stat) continue;
      const held = name === cst.ProbeTool.toolName && stat.index ? pixelAt(target, stat.index) : null;
      if (held !== null) stat.value = held; // only once the pane holds its pixels again
      const calibrated = panes.some((p) => p.meta.spacing); // without PixelSpacing a length is in pixels
      if (name === cst.LengthTool.toolName && stat.length !== undefined)
        rows.push(`Length ${Number(stat.length).toFixed(1)} ${calibrated ? stat.unit ?? "mm" : "px"}`);
      else if (name === cst.ProbeTool.toolName && stat.value !== undefined && stat.value !== null)
        rows.push(`Point ${Array.isArray(stat.value) ? stat.value.join(", ") : Math.round(Number(stat.value))} ${stat.modalityUnit ?? ""}`.trim());
      else if (stat.mean !== undefined) {
        const u = stat.modalityUnit ? ` ${stat.modalityUnit}` : "";
        rows.push(`ROI mean ${Number(stat.mean).toFixed(1)} ± ${Number(stat.stdDev).toFixed(1)}${u}, min ${stat.min} max ${stat.max}, area ${Number(stat.area).toFixed(1)} ${stat.areaUnit ?? ""}`.trim());
      }
    }
  }
  list.dataset.rois = JSON.stringify(rois()); // the ROI statistics unrounded, with the rectangle in pixel indices
  const text = rows.length ? rows.join(" · ") : "No measurements yet: pick Length, HU probe or ROI and drag on the image.";
  if (text === list.textContent) return; // unchanged: no DOM write and no rerun of the page
  const had = Number(list.dataset.count ?? "0") > 0;
  list.textContent = text;
  list.dataset.count = String(rows.length);
  if (rows.length || had) setValue({ measurements: rows }); // opening the viewer reruns nothing
}

// Every rectangle ROI: Cornerstone's statistics (mean, population SD, min, max over the pixels whose
// centres lie inside; area of the rectangle) and its corners in continuous pixel indices (column,
// row; an integer is a pixel's centre), so a test can recompute them from the DICOM.
function rois(): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const a of cst.annotation.state.getAllAnnotations() as any[]) {
    if (a.metadata?.toolName !== cst.RectangleROITool.toolName) continue;
    const [target, stat]: [string, any] = Object.entries(a.data?.cachedStats ?? {})[0] ?? ["", null];
    const [, series, frame] = target.replace(/^imageId:/, "").split(":");
    const p = panes.find((x) => String(x.meta.series_id) === series);
    const image = p && viewportOf(p)?.getImageData(); // every frame of a pane shares one geometry
    const points = a.data?.handles?.points;
    if (!stat || stat.mean === undefined || !image?.imageData || !points) continue;
    const corner = (w: number[]) => Array.from(csUtils.transformWorldToIndexContinuous(image.imageData, w as any)).slice(0, 2);
    out.push({
      stale: Boolean(a.invalidated), // moved since its statistics were computed (they are throttled while drawing)
      frame: Number(frame), corners: [corner(points[0]), corner(points[3])], mean: stat.mean, sd: stat.stdDev,
      min: stat.min, max: stat.max, area: stat.area, areaUnit: stat.areaUnit, unit: stat.modalityUnit,
    });
  }
  return out;
}

// the stored value under a probe, read from the frame the browser holds (Cornerstone's CPU stack
// path looks the value up at the slice index in a one-slice image and finds nothing)
function pixelAt(target: string, index: number[]): number | null {
  const [, series, frame] = target.replace(/^imageId:/, "").split(":");
  const p = panes.find((x) => String(x.meta.series_id) === series);
  if (!p?.data || p.meta.colour) return null;
  const [i, j] = index;
  if (i < 0 || j < 0 || i >= p.meta.cols || j >= p.meta.rows) return null;
  return p.data[Number(frame) * p.meta.rows * p.meta.cols + j * p.meta.cols + i];
}

function markers(p: Pane): void {
  const letters = orientationLetters(p.meta.orientation);
  p.overlay.left.textContent = letters?.left ?? "";
  p.overlay.right.textContent = letters?.right ?? "";
  p.overlay.top.textContent = letters?.top ?? "";
  p.overlay.bottom.textContent = letters?.bottom ?? "";
}

let shownKey = "";

// getPan reads the CPU path's translation (image pixels) while setPan takes a world focal point; the map
// between them is linear (no rotation here), so two probes find the input that gives the pan kept
function restorePan(vp: any, pan: [number, number]): void {
  vp.setPan([0, 0]);
  const t0 = vp.getPan();
  vp.setPan([1, 1]);
  const t1 = vp.getPan();
  vp.setPan([0, 1].map((k) => (t1[k] !== t0[k] ? (pan[k] - t0[k]) / (t1[k] - t0[k]) : 0)));
}

// Linked, a pane that opens beside one already shown takes its window and its relative slice
async function linkNewPanes(ref: Pane | undefined, shown: Set<string>): Promise<void> {
  if (!linked || !ref) return;
  const from = viewportOf(ref);
  const rel = from.getCurrentImageIdIndex() / Math.max(ref.imageIds.length - 1, 1);
  for (const p of panes) {
    if (p === ref || shown.has(placeKey(p))) continue;
    const vp = viewportOf(p);
    await vp.setImageIdIndex(Math.round(rel * (p.imageIds.length - 1)));
    const voi = windowOf(ref);
    if (sameScale(ref, p) && voi) vp.setProperties({ voiRange: { ...voi } });
    vp.render();
  }
}

async function render(args: RenderArgs): Promise<void> {
  const metas = (args.panes as PaneMeta[]) ?? [];
  const height = Number(args.height ?? 520);
  const key = metas.map((m) => `${m.key}:${m.series_id}`).join("|");
  if (key === shownKey) return; // the same series: the browser keeps its state (slice, window, measurements)
  shownKey = key;
  if (cineOn) toggleCine();
  const shown = new Set(panes.map(placeKey));
  for (const p of panes) {
    if (viewportOf(p)?.getImageIds?.().length) places.set(placeKey(p), placeOf(p));
    engine!.disableElement(p.viewportId);
  }
  const root = document.getElementById("root")!;
  root.replaceChildren();
  root.dataset.two = metas.length > 1 ? "1" : "0";
  panes = [];
  const row = el("div", "row");
  metas.forEach((m, i) => panes.push(buildPane(row, m, i)));
  buildToolbar(root, metas.some((m) => !m.colour), metas.some((m) => m.frames > 1));
  root.append(row);
  const measured = el("div", "measurements");
  measured.id = "measurements";
  measured.setAttribute("aria-live", "polite");
  root.append(measured);
  const bar = root.querySelector<HTMLElement>(".toolbar")!;
  row.style.height = `${height - bar.offsetHeight - 44}px`; // toolbar, slice bar and one line of measurements
  setFrameHeight(height);
  syncing = true; // each pane opens on its own window: the second must not reset the first's
  for (const [i, p] of panes.entries()) {
    p.imageIds = makeImages(p, bytesOf(args[`pixels_${i}`]));
    engine!.enableElement({ viewportId: p.viewportId, element: p.element, type: CoreEnums.ViewportType.STACK });
    group.addViewport(p.viewportId, ENGINE_ID);
    p.element.tabIndex = 0; // enableElement sets -1: the image is a tab stop (arrow keys scroll it)
    const vp = viewportOf(p);
    p.element.addEventListener(CoreEnums.Events.IMAGE_RENDERED, () => {
      stats.renders += 1;
      stats.lastRender = performance.now();
      requestAnimationFrame(() => (stats.lastPaint = performance.now())); // the frame that shows it
      updateOverlay(p);
    });
    p.element.addEventListener(CoreEnums.Events.STACK_NEW_IMAGE, () => {
      keepWindow(p);
      follow(p, "slice");
    });
    // a tool computes its statistics while drawing: read them once the annotations are drawn
    p.element.addEventListener(cst.Enums.Events.ANNOTATION_RENDERED, () => window.setTimeout(showMeasurements, 0));
    p.element.addEventListener(CoreEnums.Events.VOI_MODIFIED, (e: any) => {
      if (e.detail?.range) p.voi = { lower: e.detail.range.lower, upper: e.detail.range.upper };
      follow(p, "voi");
    });
    const place = places.get(placeKey(p)); // this pane was shown before: back to where the doctor was
    await vp.setStack(p.imageIds, Math.min(place?.index ?? p.meta.start, p.imageIds.length - 1));
    if (place?.voi) vp.setProperties({ voiRange: { ...place.voi } });
    else if (p.meta.window && !p.meta.colour) {
      const { center: c, width: w } = p.meta.window;
      vp.setProperties({ voiRange: { lower: c - w / 2, upper: c + w / 2 } });
    }
    if (place) {
      vp.setZoom(place.zoom);
      restorePan(vp, place.pan);
    }
    markers(p);
    vp.render();
  }
  await linkNewPanes(panes.find((p) => shown.has(placeKey(p))) ?? panes[0], shown);
  showMeasurements(); // every pane holds its pixels again: the probe values can be read
  window.setTimeout(() => (syncing = false), 0); // after the VOI events of the first renders
  document.body.dataset.ready = key;
}

window.addEventListener("resize", () => engine?.resize(true, true));
setUp().then(() => onRender((args) => void render(args).catch((err) => {
  document.body.dataset.error = String(err);
  document.getElementById("root")!.textContent = `The viewer could not show these images: ${err}`;
})));
