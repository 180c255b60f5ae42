// Hover maps (src/launchlab/present/hovermap.py): a switch between the states each map holds (data-states on its
// box, e.g. warm and cold L2; each circle carries its colour and text per state in data-plane), and a tooltip box
// that follows the pointer. Without scripts the SVG still shows the first state, and each circle's <title> is the
// browser's own tooltip. No library, no network.
(function () {
  "use strict";
  function setup(box) {
    var states = JSON.parse(box.getAttribute("data-states"));
    var label = box.querySelector("[data-plane-l2]");
    var circles = Array.prototype.slice.call(box.querySelectorAll("circle[data-plane]"));
    var tip = document.createElement("div");
    tip.className = "ll-planemap-tip";
    tip.style.cssText = "position:absolute;display:none;pointer-events:none;background:#fff;color:#000;" +
      "border:1px solid #888;padding:4px 6px;font-size:12px;white-space:pre-line;max-width:360px;z-index:10";
    box.style.position = "relative";
    box.appendChild(tip);
    var shown = 0;
    function show(index) {
      shown = index;
      label.textContent = states[index];
      circles.forEach(function (circle) {
        var data = JSON.parse(circle.getAttribute("data-plane"))[states[index]];
        circle.setAttribute("fill", data.colour);
        circle.querySelector("title").textContent = data.text;
      });
    }
    if (states.length > 1) {
      var button = document.createElement("button");
      button.type = "button";
      button.textContent = "switch to " + states.slice(1).concat(states.slice(0, 1)).join(" / ");
      button.style.marginLeft = "0.5em";
      button.addEventListener("click", function () {
        show((shown + 1) % states.length);
        button.textContent = "switch to " + states[(shown + 1) % states.length];
      });
      label.parentNode.appendChild(button);
    }
    circles.forEach(function (circle) {
      circle.addEventListener("mousemove", function (event) {
        var frame = box.getBoundingClientRect();
        tip.textContent = JSON.parse(circle.getAttribute("data-plane"))[states[shown]].text;
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
