// Live preview for the format editors on /rules: POST /api/autonumber/preview as the admin types.
"use strict";

function showPreview(box, ok, text, detail) {
  box.className = "preview " + (ok ? "ok" : "error");
  box.replaceChildren();
  const main = document.createElement(ok ? "code" : "span");
  main.className = ok ? "num big" : "message";
  main.textContent = text;
  box.append(main);
  if (detail) {
    const small = document.createElement("div");
    small.className = "muted small";
    small.textContent = detail;
    box.append(small);
  }
}

async function refresh(form) {
  const input = form.querySelector("input[name=format]");
  const box = form.querySelector(".preview");
  const save = form.querySelector("button[type=submit]");
  const body = {format: input.value, field: form.dataset.field, counter: Number(form.dataset.counter || 1)};
  let res, data;
  try {
    res = await fetch("/api/autonumber/preview", {
      method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
    });
    data = await res.json();
  } catch (err) {
    showPreview(box, false, "preview unavailable: " + err);
    return;
  }
  if (input.value !== body.format) return;  // a newer keystroke is on its way
  if (res.ok) {
    const parts = ["width " + data.counter_width, "scope " + data.scope];
    if (data.samples_defaulted.length) parts.push("sample values for " + data.samples_defaulted.join(", "));
    showPreview(box, true, data.value, "next value would render as this · " + parts.join(" · "));
    if (save.dataset.admin) save.disabled = false;
  } else {
    showPreview(box, false, data.error || ("HTTP " + res.status));
    save.disabled = true;
  }
  form.classList.toggle("invalid", !res.ok);
}

// Only the rule editors (they carry data-field); the counter and new-object forms have no format.
function initEditor(form) {
  let timer = null;
  const input = form.querySelector("input[name=format]");
  input.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => refresh(form), 150);
  });
  form.addEventListener("submit", (ev) => {
    if (form.classList.contains("invalid")) ev.preventDefault();
  });
  refresh(form);
}

// The rules page carries a link per field, not its editors: opening "Edit" loads them in place
// (GET /rules/{id}/edit?fragment=1); without JavaScript the link opens them on a page of their own.
async function loadEditor(details) {
  const link = details.querySelector("a.editor-link");
  if (!link || details.dataset.loading) return;
  details.dataset.loading = "1";
  try {
    const res = await fetch(link.href + "&fragment=1", {headers: {Accept: "text/html"}});
    if (!res.ok) throw new Error("HTTP " + res.status);
    const box = document.createElement("div");
    box.className = "editors";
    box.innerHTML = await res.text();
    link.replaceWith(box);
    box.querySelectorAll("form.editor[data-field]").forEach(initEditor);
  } catch (err) {
    link.textContent = "The editor did not load (" + err.message + "): open it on its own page";
  } finally {
    delete details.dataset.loading;
  }
}

document.querySelectorAll("details.rule-editor").forEach((details) => {
  details.addEventListener("toggle", () => { if (details.open) loadEditor(details); });
});
document.querySelectorAll("form.editor[data-field]").forEach(initEditor);  // the editor's own page

// After Save or Set next number the message sits next to the field's row: bring it into view and
// move the focus there, so the admin sees it and a screen reader reads it.
const result = document.getElementById("result");
if (result) {
  result.scrollIntoView({block: "center"});
  result.focus({preventScroll: true});
}
