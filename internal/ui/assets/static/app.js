// The admin UI's pages. Every value from the gateway is put in the page as text (never as
// HTML). Requests go to /ui/api/<route>, which the gateway serves as <route> with the
// signed-in identity; a state-changing one carries the page's CSRF token.
(function () {
  "use strict";
  var csrf = document.querySelector('meta[name="csrf-token"]').content;
  var statusEl = document.getElementById("status");

  function el(tag, attrs) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "class") e.className = attrs[k];
      else if (k.slice(0, 2) === "on") e.addEventListener(k.slice(2), attrs[k]);
      else if (attrs[k] === true) e.setAttribute(k, "");
      else if (attrs[k] !== false && attrs[k] != null) e.setAttribute(k, attrs[k]);
    }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c == null) continue;
      e.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (var k in attrs) { if (k === "text") e.textContent = attrs[k]; else e.setAttribute(k, attrs[k]); }
    return e;
  }
  function say(msg, bad) { statusEl.textContent = msg || ""; statusEl.className = bad ? "error" : ""; }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function errText(data, status) {
    if (data && data.error && data.error.message) return data.error.message;
    if (data && typeof data.detail === "string") return data.detail;
    if (data && typeof data.message === "string") return data.message;
    return "request failed (" + status + ")";
  }

  function api(method, route, body) {
    var opts = { method: method, credentials: "same-origin", headers: { "Accept": "application/json" } };
    if (method !== "GET") {
      opts.headers["X-CSRF-Token"] = csrf;
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body || {});
    }
    return fetch("/ui/api/" + route, opts).then(function (r) {
      if (r.status === 401 && r.headers.get("WWW-Authenticate") === null) { location.href = "/ui/login"; }
      return r.text().then(function (t) {
        var data = null;
        try { data = t ? JSON.parse(t) : null; } catch (e) { data = { message: t }; }
        return { status: r.status, ok: r.ok, data: data };
      });
    });
  }
  function list(v, key) { return Array.isArray(v) ? v : (v && Array.isArray(v[key]) ? v[key] : []); }
  function serverOf(tool) { return (tool.mcp_info && tool.mcp_info.server_name) || ""; }
  function csv(s) { return s.split(",").map(function (x) { return x.trim(); }).filter(Boolean); }

  // ---- servers ----
  function servers() {
    var tbody = document.querySelector("#servers tbody");
    function load() {
      return Promise.all([api("GET", "v1/mcp/server"), api("GET", "v1/mcp/tools"), api("GET", "health/readiness")])
        .then(function (rs) {
          if (!rs[0].ok) { say(errText(rs[0].data, rs[0].status), true); return; }
          var counts = {};
          list(rs[1].data, "tools").forEach(function (t) { var s = serverOf(t); counts[s] = (counts[s] || 0) + 1; });
          var cfg = rs[2].data && rs[2].data.config;
          document.getElementById("config-status").textContent = cfg ?
            "Config generation " + cfg.generation + (cfg.last_reload_error ? " · last reload failed: " + cfg.last_reload_error : " · last reload ok") : "";
          clear(tbody);
          var all = list(rs[0].data, "servers");
          all.forEach(function (s) { tbody.appendChild(serverRow(s, counts)); });
          loadPins(all); loadOpen();
          return api("GET", "v1/mcp/server/health").then(function (h) {
            list(h.data, "servers").forEach(function (x) {
              var row = tbody.querySelector('tr[data-id="' + CSS.escape(x.server_id) + '"]');
              if (!row) return;
              setHealth(row.querySelector(".health"), x.status);
              row.querySelector(".lasterr").textContent = x.health_check_error || "";
            });
          });
        });
    }
    // Tool pins: each server's pin state in its row, and every quarantined tool (with the
    // parts of its definition that changed, never the texts) in a list with an Approve
    // button. The list is rebuilt only when it changes, so a button is not replaced under
    // the pointer.
    var quarantine = document.querySelector("#quarantine tbody"), shown = null;
    function loadPins(all) {
      Promise.all(all.map(function (s) {
        return api("GET", "v1/mcp/server/" + encodeURIComponent(s.server_id) + "/pin").then(function (r) { return { s: s, r: r }; });
      })).then(function (rs) {
        var rows = [];
        rs.forEach(function (x) {
          var name = x.s.server_name || x.s.alias || x.s.server_id, d = x.r.data || {};
          var row = tbody.querySelector('tr[data-id="' + CSS.escape(x.s.server_id) + '"]');
          var q = x.r.ok ? list(d.quarantined, "quarantined") : [];
          if (row) row.querySelector(".pins").textContent = !x.r.ok ? "" :
            (d.server_pinned || d.pin_tool_definitions ? "every tool" : list(d.pins, "pins").length + " pinned") + (q.length ? " · " + q.length + " quarantined" : "");
          q.forEach(function (p) { rows.push({ id: x.s.server_id, server: name, tool: p.tool, reason: p.quarantine_reason || "", changed: (p.changed || []).join(", ") }); });
        });
        var key = JSON.stringify(rows);
        if (key === shown) return;
        shown = key; clear(quarantine);
        document.getElementById("no-quarantine").hidden = rows.length > 0;
        rows.forEach(function (p) {
          quarantine.appendChild(el("tr", { "data-server": p.server, "data-tool": p.tool },
            el("td", { text: p.server }), el("th", { scope: "row", text: p.tool }), el("td", { class: "changed", text: p.changed || p.reason }),
            el("td", {}, el("button", { type: "button", "aria-label": "Approve " + p.server + "/" + p.tool, onclick: function () {
              pin(p.id, { tools: [p.tool] }, "Approved " + p.tool + " of " + p.server);
            } }, "Approve"))));
        });
      });
    }
    // Upstream sessions and listens open per server, and listens running (all servers),
    // from /ui/stats.
    function loadOpen() {
      fetch("/ui/stats", { credentials: "same-origin" }).then(function (r) { return r.ok ? r.json() : null; }).then(function (d) {
        var up = d && d.upstream;
        if (!up) return;
        var by = up.listens_by_server || {};
        tbody.querySelectorAll("tr[data-name]").forEach(function (row) {
          row.querySelector(".sessions").textContent = String(up.sessions[row.dataset.name] || 0);
          row.querySelector(".listens").textContent = String(by[row.dataset.name] || 0);
        });
        document.getElementById("listens").textContent = "· " + up.listens + " listen" + (up.listens === 1 ? "" : "s") + " open";
      });
    }
    function pin(id, body, done) {
      api("POST", "v1/mcp/server/" + encodeURIComponent(id) + "/pin", body).then(function (r) {
        say(r.ok ? done : errText(r.data, r.status), !r.ok); load();
      });
    }
    function setHealth(cell, status) {
      clear(cell).appendChild(el("span", { class: "badge " + (status || "unknown"), text: status || "unknown" }));
    }
    function serverRow(s, counts) {
      var name = s.server_name || s.alias || s.server_id;
      var era = (s.mcp_info && s.mcp_info.protocol_version) || "auto";
      var actions = el("td", {}, el("button", { type: "button", class: "secondary", "aria-label": "Pin current definitions of " + name, onclick: function () {
        pin(s.server_id, {}, "Pinned the current tool definitions of " + name);
      } }, "Pin current definitions"));
      if (!s.read_only) {
        actions.appendChild(el("button", { type: "button", class: "secondary", "aria-label": "Edit " + name, onclick: function () { edit(s); } }, "Edit"));
        actions.appendChild(el("button", { type: "button", class: "secondary", "aria-label": "Delete " + name, onclick: function () {
          if (!confirm("Delete server " + name + "?")) return;
          api("DELETE", "v1/mcp/server/" + encodeURIComponent(s.server_id)).then(function (r) {
            say(r.ok ? "Deleted " + name : errText(r.data, r.status), !r.ok); load();
          });
        } }, "Delete"));
      }
      var row = el("tr", { "data-id": s.server_id, "data-name": name },
        el("th", { scope: "row" }, name), el("td", { text: s.read_only ? "config" : "stored" }),
        el("td", { text: s.transport || "http" }), el("td", { text: era }), el("td", { class: "health" }),
        el("td", { class: "tools", text: String(counts[name] || 0) }), el("td", { class: "sessions" }), el("td", { class: "listens" }), el("td", { class: "pins" }), el("td", { class: "lasterr", text: s.health_check_error || "" }), actions);
      setHealth(row.querySelector(".health"), s.status);
      return row;
    }
    var form = document.getElementById("add-server"), editing = null;
    function edit(s) {
      editing = s;
      form.elements.server_name.value = s.server_name || "";
      form.elements.url.value = s.url || "";
      form.elements.transport.value = s.transport || "http";
      form.elements.auth_type.value = s.auth_type || "none";
      form.elements.auth_value.value = "";
      form.elements.mcp_access_groups.value = (s.mcp_access_groups || []).join(", ");
      document.getElementById("editing").hidden = false;
      document.getElementById("editing-name").textContent = s.server_name || s.server_id;
      document.getElementById("save-server").textContent = "Save changes";
      form.elements.url.focus();
    }
    function endEdit() {
      editing = null; form.reset();
      document.getElementById("editing").hidden = true;
      document.getElementById("save-server").textContent = "Add server";
    }
    document.getElementById("cancel-edit").addEventListener("click", endEdit);
    function body() {
      var f = new FormData(form), b = { server_name: f.get("server_name"), url: f.get("url"), transport: f.get("transport") };
      if (f.get("auth_type") !== "none") {
        b.auth_type = f.get("auth_type");
        // Editing: "****" keeps the stored credential.
        b.credentials = { auth_value: f.get("auth_value") || (editing ? "****" : "") };
      }
      var groups = csv(f.get("mcp_access_groups") || "");
      if (groups.length) b.mcp_access_groups = groups;
      return b;
    }
    var out = document.getElementById("test-result");
    document.getElementById("test-connection").addEventListener("click", function () {
      out.textContent = "Testing…";
      api("POST", "mcp-rest/test/connection", body()).then(function (r) {
        out.textContent = r.ok && r.data && r.data.status === "ok" ? "Connection ok" :
          "Connection failed: " + errText(r.data, r.status);
      });
    });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var b = body(), verb = editing ? "PUT" : "POST";
      if (editing) b.server_id = editing.server_id;
      api(verb, "v1/mcp/server", b).then(function (r) {
        if (!r.ok) { say(errText(r.data, r.status), true); return; }
        say((editing ? "Saved " : "Added ") + (r.data.server_name || r.data.server_id)); endEdit(); out.textContent = ""; load();
      });
    });
    load();
    setInterval(load, 4000);
  }

  // ---- keys, permissions and preview ----
  function keys() {
    var tools = [], srv = [], form = document.getElementById("new-key");
    var boxServers = document.getElementById("perm-servers"), boxGroups = document.getElementById("perm-groups");
    var boxTools = document.getElementById("perm-tools"), preview = document.getElementById("preview");
    function checked(box) { return Array.prototype.map.call(box.querySelectorAll("input:checked"), function (i) { return i.value; }); }
    function perms() {
      var p = {}, s = checked(boxServers), g = checked(boxGroups), tp = {};
      if (s.length) p.mcp_servers = s;
      if (g.length) p.mcp_access_groups = g;
      boxTools.querySelectorAll("fieldset").forEach(function (fs) {
        var c = checked(fs); if (c.length) tp[fs.dataset.server] = c;
      });
      if (Object.keys(tp).length) p.mcp_tool_permissions = tp;
      return p;
    }
    // The tools a key with these lists sees: the servers named or in a named group, narrowed
    // to the tools picked per server; no lists at all: everything (no restriction).
    function renderPreview() {
      var p = perms(), names = p.mcp_servers || [], groups = p.mcp_access_groups || [], tp = p.mcp_tool_permissions || {};
      var open = !names.length && !groups.length;
      var inScope = {};
      srv.forEach(function (s) {
        var n = s.server_name || s.server_id;
        if (open || names.indexOf(n) >= 0 || (s.mcp_access_groups || []).some(function (g) { return groups.indexOf(g) >= 0; })) inScope[n] = true;
      });
      clear(preview);
      var seen = tools.filter(function (t) { var s = serverOf(t); return inScope[s] && (!tp[s] || tp[s].indexOf(t.name) >= 0); });
      seen.forEach(function (t) { preview.appendChild(el("li", { "data-tool": serverOf(t) + "/" + t.name, text: serverOf(t) + " · " + t.name })); });
      if (!seen.length) preview.appendChild(el("li", { text: "No tools." }));
      // Per-server tool pickers follow the servers picked.
      var want = names.slice();
      boxTools.querySelectorAll("fieldset").forEach(function (fs) { if (want.indexOf(fs.dataset.server) < 0) fs.remove(); });
      want.forEach(function (n) {
        if (boxTools.querySelector('fieldset[data-server="' + CSS.escape(n) + '"]')) return;
        var fs = el("fieldset", { "data-server": n }, el("legend", { text: n }));
        tools.filter(function (t) { return serverOf(t) === n; }).forEach(function (t) {
          fs.appendChild(el("label", {}, el("input", { type: "checkbox", value: t.name, onchange: renderPreview }), t.name));
        });
        boxTools.appendChild(fs);
      });
    }
    function loadKeys() {
      var tbody = clear(document.querySelector("#keys tbody"));
      api("GET", "key/list?return_full_object=true&size=100").then(function (r) {
        if (!r.ok) { say(errText(r.data, r.status), true); return; }
        list(r.data, "keys").forEach(function (k) {
          var op = k.object_permission || {}, label = k.key_alias || k.token.slice(0, 10);
          var act = function (route, verb) {
            return el("button", { type: "button", class: "secondary", "aria-label": verb + " " + label, onclick: function () {
              var body = route === "key/delete" ? { keys: [k.token] } : { key: k.token };
              api("POST", route, body).then(function (x) { say(x.ok ? verb + " " + label : errText(x.data, x.status), !x.ok); loadKeys(); });
            } }, verb);
          };
          tbody.appendChild(el("tr", { "data-token": k.token }, el("th", { scope: "row", text: k.key_alias || "" }),
            el("td", {}, el("code", { text: k.token.slice(0, 12) + "…" })), el("td", { text: k.team_id || "" }),
            el("td", { text: (op.mcp_servers || []).concat(op.mcp_access_groups || []).join(", ") || "all" }),
            el("td", { class: "state", text: k.blocked ? "blocked" : "active" }),
            el("td", {}, k.blocked ? act("key/unblock", "Unblock") : act("key/block", "Block"), act("key/delete", "Delete"))));
        });
      });
    }
    function loadTeams() {
      api("GET", "team/list").then(function (r) {
        var ul = clear(document.getElementById("teams")), sel = document.getElementById("team-select");
        while (sel.options.length > 1) sel.remove(1);
        list(r.data, "teams").forEach(function (t) {
          ul.appendChild(el("li", { text: (t.team_alias || t.team_id) + " · " + t.team_id }));
          sel.appendChild(el("option", { value: t.team_id }, t.team_alias || t.team_id));
        });
      });
    }
    Promise.all([api("GET", "v1/mcp/server"), api("GET", "v1/mcp/tools"), api("GET", "v1/mcp/access_groups")]).then(function (rs) {
      srv = list(rs[0].data, "servers"); tools = list(rs[1].data, "tools");
      srv.forEach(function (s) {
        var n = s.server_name || s.server_id;
        boxServers.appendChild(el("label", {}, el("input", { type: "checkbox", value: n, name: "server", onchange: renderPreview }), n));
      });
      list(rs[2].data, "access_groups").forEach(function (g) {
        boxGroups.appendChild(el("label", {}, el("input", { type: "checkbox", value: g, onchange: renderPreview }), g));
      });
      renderPreview();
    });
    form.addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = new FormData(form), body = { object_permission: perms() };
      if (f.get("key_alias")) body.key_alias = f.get("key_alias");
      if (f.get("team_id")) body.team_id = f.get("team_id");
      api("POST", "key/generate", body).then(function (r) {
        if (!r.ok) { say(errText(r.data, r.status), true); return; }
        say("Key created");
        document.getElementById("secret-box").hidden = false;
        document.getElementById("secret").textContent = r.data.key;
        var seen = clear(document.getElementById("seen"));
        // Ask the gateway itself what the new key sees, with the new key.
        fetch("/mcp-rest/tools/list", { credentials: "omit", headers: { "Authorization": "Bearer " + r.data.key } })
          .then(function (x) { return x.json(); }).then(function (d) {
            list(d, "tools").forEach(function (t) {
              seen.appendChild(el("li", { "data-tool": serverOf(t) + "/" + t.name, text: serverOf(t) + " · " + t.name }));
            });
          });
        loadKeys();
      });
    });
    document.getElementById("new-team").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = new FormData(ev.target);
      api("POST", "team/new", { team_alias: f.get("team_alias") }).then(function (r) {
        say(r.ok ? "Team created" : errText(r.data, r.status), !r.ok); ev.target.reset(); loadTeams();
      });
    });
    function loadOrgs() {
      api("GET", "organization/list").then(function (r) {
        var ul = clear(document.getElementById("orgs"));
        list(r.data, "organizations").forEach(function (o) {
          ul.appendChild(el("li", { text: (o.organization_alias || o.organization_id) + " · " + o.organization_id }));
        });
      });
    }
    document.getElementById("new-org").addEventListener("submit", function (ev) {
      ev.preventDefault();
      var f = new FormData(ev.target);
      api("POST", "organization/new", { organization_alias: f.get("organization_alias") }).then(function (r) {
        say(r.ok ? "Organisation created" : errText(r.data, r.status), !r.ok); ev.target.reset(); loadOrgs();
      });
    });
    loadKeys(); loadTeams(); loadOrgs();
  }

  // ---- activity ----
  function chart(s) {
    var W = 280, row = 18, rows = [["calls", s.calls, "bar-calls"]];
    Object.keys(s.errors).sort().forEach(function (k) { rows.push([k, s.errors[k], "bar-err"]); });
    rows.push(["p50 ms", s.p50_ms, "bar-lat"], ["p99 ms", s.p99_ms, "bar-lat"]);
    var maxCount = Math.max(1, s.calls), maxLat = Math.max(1, s.p99_ms);
    var g = svg("svg", { viewBox: "0 0 " + W + " " + (rows.length * row + 4), role: "img",
      "aria-label": s.server + ": " + s.calls + " calls, p50 " + s.p50_ms + " ms, p99 " + s.p99_ms + " ms" });
    rows.forEach(function (r, i) {
      var lat = r[2] === "bar-lat", w = (W - 150) * (r[1] / (lat ? maxLat : maxCount));
      g.appendChild(svg("text", { x: 0, y: i * row + 13, text: r[0] }));
      g.appendChild(svg("rect", { x: 100, y: i * row + 3, width: Math.max(1, w), height: row - 6, class: r[2] }));
      g.appendChild(svg("text", { x: 104 + w, y: i * row + 13, text: String(r[1]) }));
    });
    return el("figure", { "data-server": s.server }, el("figcaption", {}, el("strong", { text: s.server })), g);
  }
  function activity() {
    var tbody = document.querySelector("#log tbody"), charts = document.getElementById("charts");
    function add(e) {
      tbody.insertBefore(el("tr", { class: e.error ? "error" : "" }, el("td", { text: new Date(e.time).toLocaleTimeString() }),
        el("td", { text: e.method }), el("td", { text: e.target || "" }), el("td", { text: e.server || "" }),
        el("td", { text: e.caller || "" }), el("td", { text: e.status + (e.error ? " " + e.error : "") }),
        el("td", { text: e.duration_ms.toFixed(1) })), tbody.firstChild);
      while (tbody.children.length > 200) tbody.removeChild(tbody.lastChild);
    }
    var es = new EventSource("/ui/events");
    es.addEventListener("entry", function (m) { add(JSON.parse(m.data)); });
    es.onerror = function () { say("Live log disconnected; retrying…", true); };
    es.onopen = function () { say(""); };
    function loadStats() {
      fetch("/ui/stats", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (d) {
        clear(charts);
        d.servers.forEach(function (s) { charts.appendChild(chart(s)); });
        if (!d.servers.length) charts.appendChild(el("p", { text: "No upstream calls yet." }));
      });
    }
    loadStats(); setInterval(loadStats, 5000);
  }

  // The helpers and the pages, shared with the catalog page's script (catalog.js), which
  // adds its page here; both run deferred, so the page starts once both are loaded.
  var ui = window.mcpgwUI = { el: el, clear: clear, say: say, api: api, list: list, errText: errText, csrf: csrf,
    pages: { servers: servers, keys: keys, activity: activity } };
  document.addEventListener("DOMContentLoaded", function () {
    var start = ui.pages[document.body.dataset.page];
    if (start) start();
  });
})();
