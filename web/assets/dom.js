// Building the DOM without markup strings: every piece of text goes in as a text node, so
// nothing a server, an agent or a file name says can become markup in the app.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * h('button', { class: 'x', type: 'button', onclick: fn, 'aria-label': '…' }, child, …)
 * Children may be strings, nodes, arrays, or null/false (skipped).
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (key === 'text') {
      el.textContent = value;
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

export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

/** Replaces every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** An SVG icon from path data (24×24, stroked), hidden from assistive technology. */
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
 */
export function developerDetails(...children) {
  return h('details', { class: 'dev-details' }, h('summary', { text: 'For developers' }), ...children);
}

/** Announces a short message to screen readers through the app's live region. */
export function announce(message) {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.textContent = '';
  // A fresh text node in a later task makes screen readers read it even when it repeats.
  setTimeout(() => { region.textContent = message; }, 30);
}
