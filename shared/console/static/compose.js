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

  const when = form.elements.namedItem("at");

  // The field is read in the page's zone (data-zone: the session's, the
  // one the server reads it in), which may not be this browser's: a
  // laptop that travelled since sign-in, or a browser set to another zone.
  // offsetAt is that zone's UTC offset in minutes at instant ms, read from
  // Intl ("GMT+05:30"); without data-zone, the browser's own.
  let zoneFormat;
  try {
    zoneFormat = new Intl.DateTimeFormat("en-US", { timeZone: when.dataset.zone || undefined, timeZoneName: "longOffset" });
  } catch (e) {
    zoneFormat = new Intl.DateTimeFormat("en-US", { timeZoneName: "longOffset" });
  }
  const offsetAt = (ms) => {
    const part = zoneFormat.formatToParts(new Date(ms)).find((p) => p.type === "timeZoneName");
    const m = /^GMT([+\-\u2212])(\d{1,2})(?::(\d{2}))?/.exec(part ? part.value : "");
    if (!m) return 0; // "GMT": UTC
    const min = Number(m[2]) * 60 + Number(m[3] || 0);
    return m[1] === "+" ? min : -min;
  };

  // offset is minutes east of UTC as RFC 3339 writes it, "+05:30".
  const offset = (min) => {
    const a = Math.abs(min);
    const two = (n) => String(n).padStart(2, "0");
    return (min < 0 ? "-" : "+") + two(Math.floor(a / 60)) + ":" + two(a % 60);
  };

  // at is the datetime-local value as RFC 3339 with the page zone's
  // offset at that wall time, or "" (the check then says why). The offset
  // is found in two passes, as Go's time.Date finds it: the offset at the
  // wall time read as UTC, then the one at the instant that gives, which
  // differs only within hours of a daylight saving change.
  const at = () => {
    const v = when.value;
    const m = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/.exec(v);
    if (!m) return "";
    const wall = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6] || 0));
    const first = offsetAt(wall);
    const off = offsetAt(wall - first * 60000);
    return v + (m[6] === undefined ? ":00" : "") + offset(off);
  };

  const values = (name) => Array.from(form.querySelectorAll('[name="' + name + '"]')).map((el) => el.value);

  const draft = () => {
    const d = { body: form.elements.namedItem("body").value, targets: [] };
    const texts = {};
    form.querySelectorAll('textarea[name^="text."]').forEach((el) => {
      if (el.value.trim() !== "") texts[el.name.slice(5)] = el.value;
    });
    if (Object.keys(texts).length) d.texts = texts;
    const time = at();
    form.querySelectorAll('input[name="account"]:checked').forEach((el) => d.targets.push({ account: el.value, at: time }));
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
