/**
 * Small DOM helpers shared by the side panel's parts.
 */

/** A new element with its class, test id, text and title. */
export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: {
    className?: string;
    testid?: string;
    text?: string;
    title?: string;
  } = {}
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.className) {
    node.className = props.className;
  }
  if (props.testid) {
    node.dataset.testid = props.testid;
  }
  if (props.text !== undefined) {
    node.textContent = props.text;
  }
  if (props.title !== undefined) {
    node.title = props.title;
  }
  return node;
}

/** Set a node's text only when it changed (no needless layout). */
export function setText(node: HTMLElement, text: string): void {
  if (node.textContent !== text) {
    node.textContent = text;
  }
}
