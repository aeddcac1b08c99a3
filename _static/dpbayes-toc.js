// The page's contents (right-hand sidebar) marks the section the reader is in: the last heading above
// the top third of the window. The theme's own observer reacts only when a heading crosses that band, so
// after a jump into a long section (a link, a search hit, the scrollbar) it kept showing an old section.
(function () {
  "use strict";
  function update() {
    const nav = document.querySelector("#pst-page-toc-nav");
    if (!nav) return;
    const links = Array.from(nav.querySelectorAll('a[href^="#"]'));
    const line = window.innerHeight * 0.3;
    let current = null;
    for (const link of links) { // in page order
      const target = document.getElementById(decodeURIComponent(link.getAttribute("href").slice(1)));
      if (!target) continue;
      const heading = target.querySelector("h1, h2, h3, h4, h5, h6") || target;
      if (heading.getBoundingClientRect().top <= line) current = link;
    }
    for (const link of links) {
      const on = link === current;
      link.classList.toggle("active", on);
      if (on) link.setAttribute("aria-current", "true"); else link.removeAttribute("aria-current");
    }
    nav.querySelectorAll(".toc-entry").forEach(function (entry) {
      entry.classList.toggle("active", current !== null && entry.contains(current));
    });
  }
  let pending = false;
  function schedule() {
    if (pending) return;
    pending = true;
    window.requestAnimationFrame(function () { pending = false; update(); });
  }
  window.addEventListener("scroll", schedule, { passive: true });
  window.addEventListener("resize", schedule);
  window.addEventListener("hashchange", function () { window.setTimeout(update, 50); });
  window.addEventListener("load", update);
})();
