// oncepost console, the composer: live counters. On input (debounced) it
// sends the form as a draft to POST /v1/drafts/check with the session
// and shows each account's count from the answer: the server measures,
// exactly as validation does; nothing here knows a platform's rules.
// Without this script the form's Check button asks the server the same.
"use strict";
(function () {
  const form = document.getElementById("compose");
  if (!form || !window.oncepost) return;
  const counters = document.getElementById("counters");

  // offset is the browser's UTC offset at date d as "+01:00".
  const offset = (d) => {
    const m = -d.getTimezoneOffset();
    const a = Math.abs(m);
    const two = (n) => String(n).padStart(2, "0");
    return (m < 0 ? "-" : "+") + two(Math.floor(a / 60)) + ":" + two(a % 60);
  };

  // at is the datetime-local value as RFC 3339 with the offset there, or
  // "" (the check then says why). The page's zone is the session's, which
  // sign-in took from this browser.
  const at = () => {
    const v = form.elements.namedItem("at").value;
    if (!v) return "";
    const d = new Date(v);
    if (isNaN(d.getTime())) return "";
    return v + (v.length === 16 ? ":00" : "") + offset(d);
  };

  const values = (name) => Array.from(form.querySelectorAll('[name="' + name + '"]')).map((el) => el.value);

  const draft = () => {
    const d = { body: form.elements.namedItem("body").value, targets: [] };
    const texts = {};
    form.querySelectorAll('textarea[name^="text."]').forEach((el) => {
      if (el.value.trim() !== "") texts[el.name.slice(5)] = el.value;
    });
    if (Object.keys(texts).length) d.texts = texts;
    const when = at();
    form.querySelectorAll('input[name="account"]:checked').forEach((el) => d.targets.push({ account: el.value, at: when }));
    const refs = values("media_ref"), shas = values("media_sha256"), types = values("media_type"), alts = values("media_alt"), fitted = values("media_fitted");
    const removed = Array.from(form.querySelectorAll('input[name="media_remove"]:checked')).map((el) => el.value);
    const media = [];
    refs.forEach((ref, i) => {
      if (removed.includes(ref)) return;
      const m = { ref, sha256: shas[i], content_type: types[i], alt: alts[i] || "" };
      if (fitted[i]) { try { m.fitted = JSON.parse(fitted[i]); } catch (e) { /* the server refits */ } }
      media.push(m);
    });
    if (media.length) d.media = media;
    return d;
  };

  const show = (check) => {
    counters.replaceChildren();
    check.targets.forEach((t) => {
      const li = document.createElement("li");
      li.textContent = t.account + " (" + t.platform + ", " + t.field + "): " + t.length + (t.limit ? " / " + t.limit : "") + (t.over ? " — over the limit" : "");
      if (t.over) li.className = "over";
      counters.appendChild(li);
    });
    check.blocked.forEach((b) => {
      const li = document.createElement("li");
      li.className = "over";
      li.textContent = "Blocklisted: “" + b.found + "” in " + b.field;
      counters.appendChild(li);
    });
  };

  let timer = 0, seq = 0;
  const run = () => {
    const mine = ++seq;
    window.oncepost.api("POST", "/v1/drafts/check", draft()).then((check) => {
      if (mine === seq) show(check);
    }).catch(() => { /* the Check button still works */ });
  };
  const later = () => { clearTimeout(timer); timer = setTimeout(run, 250); };
  form.addEventListener("input", later);
  form.addEventListener("change", later);
  if (form.querySelector('input[name="account"]:checked')) run();
})();
