// The Streamlit custom-component protocol (v1), spoken directly: the frame says it is ready,
// receives "streamlit:render" messages with its arguments (bytes arrive as Uint8Array through
// the session's own websocket) and may set its height or a value. No streamlit-component-lib:
// it would add React to a bundle that does not need it.

export type RenderArgs = Record<string, unknown>;

function send(type: string, data: Record<string, unknown>): void {
  window.parent.postMessage({ isStreamlitMessage: true, type, ...data }, "*");
}

export function onRender(handler: (args: RenderArgs) => void): void {
  window.addEventListener("message", (event: MessageEvent) => {
    const msg = event.data;
    if (msg && msg.type === "streamlit:render") handler(msg.args as RenderArgs);
  });
  send("streamlit:componentReady", { apiVersion: 1 });
}

export function setFrameHeight(height: number): void {
  send("streamlit:setFrameHeight", { height });
}

export function setValue(value: unknown): void {
  send("streamlit:setComponentValue", { value, dataType: "json" });
}
