// Live view: follows a conversation over the gateway's WebSocket (/ws,
// conversations/subscribe), appending each reply chunk as it arrives. On a lost
// connection it resubscribes with afterSeq = the last seq shown, and drops any event at
// or below it, so nothing is missed or shown twice.
(function () {
  "use strict";
  var root = document.getElementById("live");
  if (!root) { return; }
  var contextId = root.dataset.context;
  // The owner: the socket carries the console's session cookie, which lets it follow any
  // peer's conversation.
  var peer = root.dataset.peer;
  var lastSeq = Number(root.dataset.after) || 0;
  var text = document.getElementById("live-text");
  var status = document.getElementById("live-status");
  var seqEl = document.getElementById("live-seq");
  var stateEl = document.getElementById("live-state");
  var retry = 250;
  var nextId = 1;
  var current = null;

  function show(ev) {
    var u = ev.artifactUpdate;
    if (u && u.artifact && u.artifact.parts) {
      u.artifact.parts.forEach(function (p) {
        if (typeof p.text === "string") {
          var span = document.createElement("span");
          span.className = "chunk";
          span.dataset.seq = String(ev.seq);
          span.textContent = p.text; // text, never markup
          text.appendChild(span);
        }
      });
    }
    var s = ev.statusUpdate || ev.task;
    if (s && s.status && s.status.state) {
      stateEl.textContent = s.status.state;
    }
  }

  function connect() {
    var scheme = location.protocol === "https:" ? "wss://" : "ws://";
    var ws = new WebSocket(scheme + location.host + "/ws");
    current = ws;
    root.dataset.connects = String(Number(root.dataset.connects || 0) + 1);
    var id = nextId++;
    ws.onopen = function () {
      retry = 250;
      status.textContent = "connected";
      ws.send(JSON.stringify({ jsonrpc: "2.0", id: id, method: "conversations/subscribe",
        params: { contextId: contextId, peer: peer, afterSeq: lastSeq } }));
    };
    ws.onmessage = function (m) {
      var f;
      try { f = JSON.parse(m.data); } catch (e) { return; }
      if (f.error) { status.textContent = "error: " + f.error.message; return; }
      var ev = f.result;
      if (!ev || typeof ev.seq !== "number" || ev.seq <= lastSeq) { return; }
      lastSeq = ev.seq;
      seqEl.textContent = String(lastSeq);
      show(ev);
    };
    ws.onclose = function () {
      status.textContent = "reconnecting…";
      setTimeout(connect, retry);
      retry = Math.min(retry * 2, 5000);
    };
  }
  // consoleLiveDrop closes the socket as a lost connection would (the reconnect path).
  window.consoleLiveDrop = function () { if (current) { current.close(); } };
  connect();
})();
