// The catalog page: the tools, prompts, resources and resource templates the signed-in identity
// sees, with each server's outcome per list, and a panel to call a tool, get a prompt or read a
// resource. Every request is an MCP request posted to /ui/mcp, which the gateway serves as its
// own /mcp (2026-07-28) with the signed-in identity. A call's answer may be an SSE stream
// (notifications/progress before the result): it is read as it arrives (fetch's body reader), so
// progress shows live. Every value is put in the page as text, never as HTML; binary content is
// shown as its type and size only.
(function () {
  "use strict";
  var ui = window.mcpgwUI, el = ui.el, clear = ui.clear, say = ui.say;
  var sep = document.body.dataset.sep || "-";
  var maxPages = 20; // pages of one list followed at most

  // ---- MCP through /ui/mcp ----
  // mcp posts one request; opts.onNote gets each notification as it arrives. It resolves with
  // the HTTP status and the JSON-RPC response (or the refusal's body).
  function mcp(method, params, opts) {
    opts = opts || {};
    var body = { method: method, params: params || {} };
    if (opts.progress) body.progress = true;
    if (opts.schema) body.input_schema = opts.schema;
    return fetch("/ui/mcp", { method: "POST", credentials: "same-origin", body: JSON.stringify(body),
      headers: { "Content-Type": "application/json", "Accept": "application/json, text/event-stream", "X-CSRF-Token": ui.csrf } })
      .then(function (r) {
        if (r.status === 401) location.href = "/ui/login";
        if ((r.headers.get("Content-Type") || "").indexOf("text/event-stream") === 0 && r.body) return readStream(r, opts.onNote);
        return r.text().then(function (t) {
          var msg = null;
          try { msg = t ? JSON.parse(t) : null; } catch (e) { msg = { message: t }; }
          return { status: r.status, msg: msg };
        });
      }, function () { return { status: 0, msg: { message: "the gateway did not answer" } }; });
  }
  // readStream reads an SSE answer chunk by chunk: each event's data is one JSON-RPC message;
  // notifications go to onNote at once, the response ends the read.
  function readStream(r, onNote) {
    var reader = r.body.getReader(), dec = new TextDecoder(), buf = "", final = null;
    function drain() {
      var i;
      while (!final && (i = buf.indexOf("\n\n")) >= 0) {
        var block = buf.slice(0, i), data = [];
        buf = buf.slice(i + 2);
        block.split("\n").forEach(function (l) { if (l.indexOf("data:") === 0) data.push(l.slice(5).replace(/^ /, "")); });
        if (!data.length) continue;
        var msg;
        try { msg = JSON.parse(data.join("\n")); } catch (e) { continue; }
        if (msg.method && msg.id === undefined) { if (onNote) onNote(msg); } else final = msg;
      }
    }
    function pump() {
      return reader.read().then(function (x) {
        if (!x.done) buf += dec.decode(x.value, { stream: true });
        drain();
        if (final || x.done) {
          if (!x.done) reader.cancel();
          return { status: r.status, msg: final || { message: "the answer ended without a result" } };
        }
        return pump();
      });
    }
    return pump();
  }
  function rpcError(x) {
    var m = x.msg || {};
    if (m.error && m.error.message) return m.error.message;
    if (typeof m.detail === "string") return m.detail;
    if (typeof m.message === "string") return m.message;
    return "request failed (" + x.status + ")";
  }
  // listAll follows a list's pages; outcomes are the first page's per-server outcomes.
  function listAll(method, key) {
    var items = [], outcomes = null, pages = 0;
    function page(cursor) {
      return mcp(method, cursor ? { cursor: cursor } : {}).then(function (x) {
        var res = x.msg && x.msg.result;
        if (!res) return { items: items, outcomes: outcomes || {}, error: rpcError(x) };
        items = items.concat(res[key] || []);
        var o = res._meta && res._meta["litellm.ai/server_outcomes"];
        if (o && !outcomes) outcomes = o;
        if (res.nextCursor && ++pages < maxPages) return page(res.nextCursor);
        return { items: items, outcomes: outcomes || {}, error: null };
      });
    }
    return page(null);
  }

  // ---- rendering results as text ----
  function bytesOf(b64) {
    b64 = b64 || "";
    var pad = /==$/.test(b64) ? 2 : (/=$/.test(b64) ? 1 : 0);
    return Math.max(0, Math.floor(b64.length * 3 / 4) - pad);
  }
  function binary(kind, mime, b64) {
    return el("p", { class: "binary", text: kind + " · " + (mime || "unknown type") + " · " + bytesOf(b64) + " bytes (not shown)" });
  }
  function resourceBlock(r) {
    var head = el("p", { class: "uri" }, el("code", { text: r.uri || "" }), r.mimeType ? " · " + r.mimeType : "");
    if (typeof r.blob === "string") return el("div", { class: "content" }, head, binary("blob", r.mimeType, r.blob));
    return el("div", { class: "content" }, head, el("pre", { class: "text", text: r.text || "" }));
  }
  function contentBlock(c) {
    c = c || {};
    switch (c.type) {
      case "text": return el("pre", { class: "text", text: c.text || "" });
      case "image": case "audio": return binary(c.type, c.mimeType, c.data);
      case "resource": return resourceBlock(c.resource || {});
      case "resource_link": return el("p", { class: "uri" }, "link · ", el("code", { text: c.uri || "" }), c.mimeType ? " · " + c.mimeType : "");
    }
    return el("pre", { class: "text", text: JSON.stringify(c, null, 2) });
  }
  function showTool(res, out) {
    if (res.resultType === "input_required") {
      out.appendChild(el("p", { class: "error", text: "The tool asks for input the UI does not give (elicitation, sampling or roots): call it from an MCP client." }));
    }
    if (res.isError) out.appendChild(el("p", { class: "error", text: "The tool reported an error:" }));
    (res.content || []).forEach(function (c) { out.appendChild(contentBlock(c)); });
    if (res.structuredContent !== undefined) {
      out.appendChild(el("p", { text: "Structured content:" }));
      out.appendChild(el("pre", { class: "text", text: JSON.stringify(res.structuredContent, null, 2) }));
    }
  }
  function showPrompt(res, out) {
    if (res.description) out.appendChild(el("p", { text: res.description }));
    (res.messages || []).forEach(function (m) {
      out.appendChild(el("div", { class: "message" }, el("strong", { text: m.role || "" }), contentBlock(m.content)));
    });
  }
  function showRead(res, out) {
    (res.contents || []).forEach(function (r) { out.appendChild(resourceBlock(r)); });
  }

  // ---- argument forms ----
  function fieldFor(name, schema, required) {
    var id = "arg-" + name, input;
    if (Array.isArray(schema.enum)) {
      input = el("select", { id: id, name: name });
      schema.enum.forEach(function (v) { input.appendChild(el("option", { value: JSON.stringify(v) }, String(v))); });
      input.dataset.kind = "enum";
    } else if (schema.type === "boolean") {
      input = el("input", { id: id, name: name, type: "checkbox" }); input.dataset.kind = "boolean";
    } else if (schema.type === "number" || schema.type === "integer") {
      input = el("input", { id: id, name: name, type: "number", step: schema.type === "integer" ? "1" : "any", required: required });
      input.dataset.kind = "number";
    } else if (schema.type === "string") {
      input = el("input", { id: id, name: name, required: required }); input.dataset.kind = "string";
    } else {
      input = el("textarea", { id: id, name: name, rows: "3", placeholder: "JSON", required: required }); input.dataset.kind = "json";
    }
    var help = schema.description ? el("small", { text: " " + schema.description }) : null;
    return el("label", { for: id }, name + (required ? " (required)" : ""), help, input);
  }
  function readArgs(fields) {
    var args = {};
    fields.querySelectorAll("[data-kind]").forEach(function (i) {
      var k = i.dataset.kind;
      if (k === "boolean") { args[i.name] = i.checked; return; }
      if (i.value === "") return;
      if (k === "number") args[i.name] = Number(i.value);
      else if (k === "enum" || k === "json") args[i.name] = JSON.parse(i.value);
      else args[i.name] = i.value;
    });
    return args;
  }
  // templateVars are the variables of a URI template ({id}, {+path}, {?q}: the names).
  function templateVars(t) {
    var out = [];
    (t.match(/\{[^}]+\}/g) || []).forEach(function (x) {
      x.slice(1, -1).replace(/^[+#./;?&]/, "").split(",").forEach(function (n) {
        n = n.replace(/[*]|:\d+$/g, "");
        if (n && out.indexOf(n) < 0) out.push(n);
      });
    });
    return out;
  }
  function expand(t, vals) {
    return t.replace(/\{([+#./;?&]?)([^}]+)\}/g, function (_, op, names) {
      var vs = names.split(",").map(function (n) { return vals[n.replace(/[*]|:\d+$/g, "")] || ""; });
      var enc = op === "+" || op === "#" ? encodeURI : encodeURIComponent;
      return (op && op !== "+" ? op : "") + vs.map(enc).join(",");
    });
  }

  // ---- the try panel: a tool call, a prompt, a resource read ----
  var panel = document.getElementById("try"), fields = document.getElementById("try-fields");
  var progress = document.getElementById("try-progress"), bar = document.getElementById("try-bar");
  var events = document.getElementById("try-events"), result = document.getElementById("try-result");
  var runBtn = document.getElementById("try-run"), current = null;
  function open(title, desc, label, build, run) {
    current = run;
    panel.hidden = false;
    document.getElementById("try-name").textContent = title;
    document.getElementById("try-desc").textContent = desc || "";
    clear(fields); clear(events); clear(result);
    progress.textContent = ""; bar.hidden = true; runBtn.textContent = label;
    build(fields);
    (fields.querySelector("input,select,textarea") || runBtn).focus();
  }
  function note(kind, text) {
    events.appendChild(el("li", { class: kind, "data-kind": kind, "data-t": String(Math.round(performance.now())), text: text }));
  }
  // send runs one request from the panel, showing progress as it arrives, then the result.
  function send(what, method, params, opts, show) {
    var started = Date.now();
    clear(events); clear(result); bar.hidden = true;
    progress.textContent = what + "…";
    var timer = setInterval(function () { progress.textContent = what + "… " + ((Date.now() - started) / 1000).toFixed(1) + " s"; }, 200);
    opts.onNote = function (n) {
      if (n.method !== "notifications/progress") return;
      var p = n.params || {};
      bar.hidden = false;
      if (p.total > 0) { bar.max = p.total; bar.value = p.progress; } else bar.removeAttribute("value");
      note("progress", "Progress " + p.progress + (p.total ? " of " + p.total : "") + (p.message ? ": " + p.message : ""));
    };
    mcp(method, params, opts).then(function (x) {
      clearInterval(timer);
      var res = x.msg && x.msg.result, ok = !!res && !res.isError;
      progress.textContent = (ok ? "Done" : "Failed") + " in " + (Date.now() - started) + " ms";
      note("result", ok ? "Result" : "Failed");
      if (res) show(res, result);
      else result.appendChild(el("p", { class: "error", text: rpcError(x) }));
    });
  }
  document.getElementById("try-form").addEventListener("submit", function (ev) {
    ev.preventDefault();
    if (current) current();
  });
  function badArgs() { progress.textContent = "An argument is not valid JSON."; }

  // ---- the lists ----
  // split names an aggregate tool or prompt's server and bare name: the longest server name
  // that, with the separator, begins it.
  function split(name, servers) {
    var best = "";
    servers.forEach(function (s) { if (s.length > best.length && name.indexOf(s + sep) === 0) best = s; });
    return best ? { server: best, bare: name.slice(best.length + sep.length) } : { server: "", bare: name };
  }
  function grouped(ul, items, servers, noun, item) {
    var by = {};
    items.forEach(function (t) { var n = split(t.name, servers); (by[n.server] = by[n.server] || []).push({ t: t, bare: n.bare }); });
    Object.keys(by).sort().forEach(function (s) {
      ul.appendChild(el("li", { class: "group", "data-server": s }, el("strong", { text: (s || "(no server)") + " · " + by[s].length + " " + noun })));
      by[s].forEach(function (x) { ul.appendChild(el("li", {}, item(x.t, s, x.bare))); });
    });
    if (!items.length) ul.appendChild(el("li", { text: "No " + noun + " visible." }));
  }
  function tools(list, servers) {
    grouped(document.getElementById("tools"), list, servers, "tools", function (t, s, bare) {
      return el("button", { type: "button", class: "secondary", "data-tool": s + "/" + bare, onclick: function () {
        var schema = t.inputSchema || {}, req = schema.required || [];
        open((s ? s + " · " : "") + bare, t.description, "Call", function (f) {
          Object.keys(schema.properties || {}).forEach(function (n) { f.appendChild(fieldFor(n, schema.properties[n], req.indexOf(n) >= 0)); });
        }, function () {
          var args;
          try { args = readArgs(fields); } catch (e) { badArgs(); return; }
          send("Calling " + bare, "tools/call", { name: t.name, arguments: args }, { progress: true, schema: t.inputSchema }, showTool);
        });
      } }, bare);
    });
  }
  function prompts(list, servers) {
    grouped(document.getElementById("prompts"), list, servers, "prompts", function (p, s, bare) {
      var args = p.arguments || [];
      return el("button", { type: "button", class: "secondary", "data-prompt": s + "/" + bare, onclick: function () {
        open((s ? s + " · " : "") + (p.title || bare), p.description, "Get prompt", function (f) {
          args.forEach(function (a) { f.appendChild(fieldFor(a.name, { type: "string", description: a.description }, !!a.required)); });
        }, function () {
          send("Getting " + bare, "prompts/get", { name: p.name, arguments: readArgs(fields) }, { progress: true }, showPrompt);
        });
      } }, p.title || bare);
    });
  }
  function readButton(label, attrs, title, desc, build, uriOf) {
    attrs.type = "button"; attrs.class = "secondary";
    attrs.onclick = function () {
      open(title, desc, "Read", build, function () {
        send("Reading", "resources/read", { uri: uriOf() }, { progress: true }, showRead);
      });
    };
    return el("button", attrs, label);
  }
  function resources(list) {
    var ul = document.getElementById("resources");
    list.forEach(function (r) {
      ul.appendChild(el("li", {}, readButton(r.title || r.name || r.uri, { "data-uri": r.uri }, r.title || r.name || r.uri,
        r.description, function () {}, function () { return r.uri; }),
        " ", el("code", { text: r.uri }), r.mimeType ? el("small", { text: " " + r.mimeType }) : null));
    });
    if (!list.length) ul.appendChild(el("li", { text: "No resources visible." }));
  }
  function templates(list) {
    var ul = document.getElementById("templates");
    list.forEach(function (t) {
      var vars = templateVars(t.uriTemplate || "");
      ul.appendChild(el("li", {}, readButton(t.title || t.name || t.uriTemplate, { "data-template": t.uriTemplate }, t.uriTemplate,
        t.description, function (f) {
          vars.forEach(function (n) { f.appendChild(fieldFor(n, { type: "string" }, true)); });
        }, function () { return expand(t.uriTemplate, readArgs(fields)); }),
        " ", el("code", { text: t.uriTemplate })));
    });
    if (!list.length) ul.appendChild(el("li", { text: "No resource templates visible." }));
  }
  function outcomes(lists, servers, state) {
    var tbody = document.querySelector("#outcomes tbody");
    servers.slice().sort().forEach(function (s) {
      var st = state[s] || {}, status = st.status || "unknown";
      var row = el("tr", { "data-server": s }, el("th", { scope: "row", text: s }),
        el("td", {}, el("span", { class: "badge " + status, text: status })));
      lists.forEach(function (l, i) {
        var o = l.outcomes[s];
        var cls = ["tools", "prompts", "resources", "templates"][i];
        row.appendChild(el("td", { class: cls + (o && o.status !== "ok" ? " error" : "") },
          o ? o.status + (o.count !== undefined ? " · " + o.count : "") + (o.message ? " · " + o.message : "") : "—"));
      });
      tbody.appendChild(row);
    });
  }

  function catalog() {
    var kinds = [["tools/list", "tools"], ["prompts/list", "prompts"], ["resources/list", "resources"], ["resources/templates/list", "resourceTemplates"]];
    Promise.all(kinds.map(function (k) { return listAll(k[0], k[1]); }).concat([ui.api("GET", "v1/mcp/server")])).then(function (rs) {
      var lists = rs.slice(0, 4), state = {}, seen = {}, servers = [];
      ui.list(rs[4].data, "servers").forEach(function (s) { state[s.server_name || s.server_id] = s; });
      lists.forEach(function (l) { Object.keys(l.outcomes).forEach(function (n) { if (!seen[n]) { seen[n] = true; servers.push(n); } }); });
      var names = servers.concat(Object.keys(state));
      outcomes(lists, servers, state);
      tools(lists[0].items, names); prompts(lists[1].items, names); resources(lists[2].items); templates(lists[3].items);
      var bad = lists.filter(function (l) { return l.error; });
      if (bad.length) say(bad[0].error, true);
    });
  }
  ui.pages.catalog = catalog;
})();
