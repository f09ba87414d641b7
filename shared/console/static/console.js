// oncepost console: progressive JavaScript only. Every page works
// without it; with it, the sign-in form sends the browser's time zone,
// and pages that want live data call the /v1 API with the session
// (oncepost.api), the CSRF token in a header.
"use strict";
(function () {
  const csrf = () => {
    const m = document.querySelector('meta[name="csrf-token"]');
    return m ? m.content : "";
  };
  window.oncepost = {
    // api calls the HTTP API as the signed-in session; it resolves to the
    // decoded JSON (or null for 204) and rejects with the problem.
    api: async function (method, path, body) {
      const init = { method, headers: { "X-CSRF-Token": csrf() }, credentials: "same-origin" };
      if (body !== undefined) {
        init.headers["Content-Type"] = "application/json";
        init.body = JSON.stringify(body);
      }
      const res = await fetch(path, init);
      if (res.status === 204) return null;
      const data = await res.json().catch(() => null);
      if (!res.ok) throw data || { status: res.status, title: res.statusText };
      return data;
    },
  };
  document.addEventListener("DOMContentLoaded", () => {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "";
    document.querySelectorAll("input[data-browser-zone]").forEach((el) => { el.value = zone; });
  });
  // Live statuses (calendar): a region with data-live names a stream of
  // server-sent events; each "statuses" event is a list of
  // {post, account, status}, and the badges with those data attributes
  // are updated in place (the region is aria-live="polite").
  document.addEventListener("DOMContentLoaded", () => {
    const region = document.querySelector("[data-live]");
    if (!region || !window.EventSource) return;
    const events = new EventSource(region.dataset.live);
    events.addEventListener("statuses", (ev) => {
      let changes;
      try { changes = JSON.parse(ev.data); } catch (e) { return; }
      for (const c of changes) {
        const sel = '.status[data-post="' + CSS.escape(c.post) + '"][data-account="' + CSS.escape(c.account) + '"]';
        region.querySelectorAll(sel).forEach((el) => {
          if (el.dataset.status === c.status) return;
          el.dataset.status = c.status;
          el.className = "status status-" + c.status;
          el.textContent = c.status;
        });
      }
    });
    window.addEventListener("pagehide", () => events.close());
  });
})();
