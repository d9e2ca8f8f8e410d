// Building the DOM without markup strings: every piece of text goes in as a text node, so
// nothing a server, an agent or a file name says can become markup in the app.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * What `h` and `append` take as a child: text, a number, a node, a list of children, or nothing
 * (null, undefined and false are skipped).
 * @typedef {string | number | Node | null | undefined | false | Children} Child
 */

/**
 * A list of children, as deep as it is (its own typedef: a type alias cannot name itself).
 * @typedef {Array<string | number | Node | null | undefined | false | Children>} Children
 */

/**
 * The handlers `h` adds (`onclick`, `onkeydown`, …): each gets its event, whose `currentTarget`
 * is the element it was added to.
 * @template {keyof HTMLElementTagNameMap} T
 * @typedef {{ [K in keyof HTMLElementEventMap as `on${K}`]?: (event: HTMLElementEventMap[K] & { currentTarget: HTMLElementTagNameMap[T] }) => void }} Handlers
 */

/**
 * The attributes of an element `h` makes: `class`, `text` (its text content), `dataset`, an
 * `on…` handler, or any attribute by name (true sets it empty; null, undefined and false leave
 * it out).
 * @template {keyof HTMLElementTagNameMap} T
 * @typedef {Handlers<T> & { class?: string | null, text?: string | null, dataset?: Record<string, string>,
 *   [name: string]: string | number | boolean | null | undefined | Record<string, string> | ((event: never) => void) }} Attrs
 */

/**
 * h('button', { class: 'x', type: 'button', onclick: fn, 'aria-label': '…' }, child, …)
 * Children may be strings, nodes, arrays, or null/false (skipped).
 * @template {keyof HTMLElementTagNameMap} T
 * @param {T} tag
 * @param {Attrs<T> | null} [attrs]
 * @param {...Child} children
 * @returns {HTMLElementTagNameMap[T]}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), /** @type {EventListener} */ (value));
    } else if (key === 'class') {
      el.className = /** @type {string} */ (value);
    } else if (key === 'text') {
      el.textContent = /** @type {string} */ (value);
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, '');
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

/**
 * Appends `children` to `parent` (text as text nodes; null, undefined and false skipped).
 * @template {ParentNode} P
 * @param {P} parent
 * @param {Child[]} children
 * @returns {P}
 */
export function append(parent, children) {
  // Flattened at any depth: TypeScript cannot spell out what that gives, hence unknown.
  for (const child of /** @type {unknown[]} */ (children).flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/**
 * Replaces every child of `el`.
 * @template {Element} E
 * @param {E} el
 * @param {...Child} children
 * @returns {E}
 */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/**
 * An SVG icon from path data (24×24, stroked), hidden from assistive technology.
 * @param {readonly string[]} paths
 * @param {string} [className]
 * @returns {SVGSVGElement}
 */
export function svgIcon(paths, className = 'icon') {
  const svg = document.createElementNS(SVG_NS, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('class', className);
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('focusable', 'false');
  for (const d of paths) {
    const path = document.createElementNS(SVG_NS, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
}

/**
 * What only a developer needs (an API route, a tool's name, a path in an agent's sandbox), folded
 * away under "For developers", so that the page itself speaks of the product.
 * @param {...Child} children
 * @returns {HTMLDetailsElement}
 */
export function developerDetails(...children) {
  return h('details', { class: 'dev-details' }, h('summary', { text: 'For developers' }), ...children);
}

/**
 * Announces a short message to screen readers through the app's live region.
 * @param {string} message
 */
export function announce(message) {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.textContent = '';
  // A fresh text node in a later task makes screen readers read it even when it repeats.
  setTimeout(() => { region.textContent = message; }, 30);
}
