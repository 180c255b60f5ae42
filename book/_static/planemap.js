// The fusion chapter's interactive plane map: a warm/cold L2 switch over the inline SVG that the page writes
// (each circle carries its colours and texts per L2 state in data-plane), and a tooltip box that follows the
// pointer. Without scripts the SVG still shows the warm map, and each circle's <title> is the browser's own
// tooltip. No library, no network.
(function () {
  "use strict";
  function setup(box) {
    var svg = box.querySelector("svg");
    var label = box.querySelector("[data-plane-l2]");
    var circles = Array.prototype.slice.call(svg.querySelectorAll("circle[data-plane]"));
    var tip = document.createElement("div");
    tip.className = "ll-planemap-tip";
    tip.style.cssText = "position:absolute;display:none;pointer-events:none;background:#fff;border:1px solid #888;" +
      "padding:4px 6px;font-size:12px;white-space:pre-line;max-width:360px;z-index:10";
    box.style.position = "relative";
    box.appendChild(tip);
    var state = "warm";
    function show(l2) {
      state = l2;
      label.textContent = l2;
      circles.forEach(function (circle) {
        var data = JSON.parse(circle.getAttribute("data-plane"))[l2];
        circle.setAttribute("fill", data.colour);
        circle.querySelector("title").textContent = data.text;
      });
    }
    var button = document.createElement("button");
    button.type = "button";
    button.textContent = "switch warm / cold L2";
    button.style.marginLeft = "0.5em";
    button.addEventListener("click", function () { show(state === "warm" ? "cold" : "warm"); });
    label.parentNode.appendChild(button);
    circles.forEach(function (circle) {
      circle.addEventListener("mousemove", function (event) {
        var frame = box.getBoundingClientRect();
        tip.textContent = JSON.parse(circle.getAttribute("data-plane"))[state].text;
        tip.style.left = (event.clientX - frame.left + 12) + "px";
        tip.style.top = (event.clientY - frame.top + 12) + "px";
        tip.style.display = "block";
      });
      circle.addEventListener("mouseleave", function () { tip.style.display = "none"; });
    });
  }
  function start() {
    Array.prototype.forEach.call(document.querySelectorAll(".ll-planemap"), setup);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
