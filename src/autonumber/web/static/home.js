// Home page search: filter the object cards as the user types (the form's ?q= does the same without JS).
// Every object is on the page, the ones a submitted search did not match hidden, so any later search
// filters all of them again.
"use strict";

const box = document.getElementById("q");
const cards = Array.from(document.querySelectorAll("#object-cards .card"));
const none = document.getElementById("no-match");
const summary = document.getElementById("search-summary");
const count = document.getElementById("match-count");
const query = document.getElementById("match-query");

function filter() {
  const q = box.value.trim().toLowerCase();
  let shown = 0;
  for (const card of cards) {
    const hit = !q || card.dataset.search.includes(q);
    card.hidden = !hit;
    if (hit) shown += 1;
  }
  none.hidden = shown > 0;
  none.replaceChildren("No object matches" + (q ? " " : ""));
  if (q) none.append(Object.assign(document.createElement("strong"), {textContent: box.value.trim()}));
  none.append(".");
  summary.hidden = !q;
  count.textContent = String(shown);
  query.textContent = box.value.trim();
}

box.addEventListener("input", filter);
