// Home page search: filter the object cards as the user types (the form's ?q= does the same without JS).
"use strict";

const box = document.getElementById("q");
const cards = Array.from(document.querySelectorAll("#object-cards .card"));
const none = document.getElementById("no-match");

function filter() {
  const q = box.value.trim().toLowerCase();
  let shown = 0;
  for (const card of cards) {
    const hit = !q || card.dataset.search.includes(q);
    card.hidden = !hit;
    if (hit) shown += 1;
  }
  none.hidden = shown > 0;
}

box.addEventListener("input", filter);

