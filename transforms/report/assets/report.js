// trajcurate report: selector switching, the threshold slider, the trajectory viewer.
// Data comes from data.js (window.TRAJCURATE_GRID, window.TRAJCURATE_EXAMPLES). Every text
// from the data is set with textContent, never parsed as HTML.
"use strict";

(function () {
  const GRID = window.TRAJCURATE_GRID || { grid: { segments: {} }, threshold: 0.5 };
  const EXAMPLES = window.TRAJCURATE_EXAMPLES || {};
  const LONG = 600; // a tool result longer than this starts collapsed

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  // Selectors: show the chart boxes of the section that match every select's value.
  document.querySelectorAll(".controls[data-switch]").forEach(function (controls) {
    const section = controls.closest("section");
    const selects = controls.querySelectorAll("select[data-select]");
    function update() {
      section.querySelectorAll(".chart-box").forEach(function (box) {
        let shown = true;
        selects.forEach(function (select) {
          const want = select.getAttribute("data-select");
          if (box.dataset[want] !== undefined && box.dataset[want] !== select.value) shown = false;
        });
        box.hidden = !shown;
      });
    }
    selects.forEach(function (select) { select.addEventListener("change", update); });
    update();
  });

  // Threshold explorer: kept / dropped per segment from the precomputed grid.
  const slider = document.getElementById("threshold");
  const shown = document.getElementById("threshold-value");
  function showThreshold() {
    const step = Number(slider.value);
    shown.textContent = (step / 100).toFixed(2);
    document.querySelectorAll("tr[data-segment]").forEach(function (row) {
      const segment = GRID.grid.segments[row.getAttribute("data-segment")];
      if (!segment) return;
      const kept = segment.kept[step];
      const keptResolved = segment.kept_resolved[step];
      const cells = {
        kept: kept,
        dropped: segment.total - kept,
        kept_resolved: keptResolved,
        dropped_resolved: segment.resolved_total - keptResolved,
      };
      Object.keys(cells).forEach(function (name) {
        const cell = row.querySelector('[data-cell="' + name + '"]');
        if (cell) cell.textContent = String(cells[name]);
      });
    });
  }
  if (slider) slider.addEventListener("input", showThreshold);

  // The viewer.
  const dialog = document.getElementById("viewer");
  const title = document.getElementById("viewer-title");
  const body = document.getElementById("viewer-body");

  function facts(example) {
    const list = el("dl", null, "facts");
    const items = [
      ["job", example.job], ["task", example.task], ["scaffold", example.scaffold],
      ["model", example.model], ["language", example.language], ["reward", example.reward],
      ["resolved", example.resolved ? "yes" : "no"], ["turns", example.turns],
      ["decision", example.decision + (example.reason ? " — " + example.reason : "")],
      ["composite", example.score.composite_score],
    ];
    items.forEach(function (item) {
      list.appendChild(el("dt", item[0]));
      list.appendChild(el("dd", item[1] === null || item[1] === undefined ? "–" : item[1]));
    });
    return list;
  }

  function jump(message, label, prefix) {
    const id = (prefix || "m-") + message;
    const link = el("a", label, "jump");
    link.href = "#" + id;
    link.addEventListener("click", function (event) {
      event.preventDefault();
      const target = document.getElementById(id);
      if (!target) return; // one of the messages left out of a very long record
      const folded = target.closest("details");
      if (folded) folded.open = true;
      target.scrollIntoView();
      target.classList.add("flash");
    });
    return link;
  }

  function reasons(found) {
    const box = el("div", null, "reasons");
    box.appendChild(el("h3", "Why this score"));
    const list = el("ul");
    const sub = found.sub;
    list.appendChild(el("li", "SUB " + sub.value + ": " + sub.ending + " (base " + sub.ending_base +
      "; " + sub.late_errors + " of the last " + sub.late_observations + " tool results errored" +
      (sub.late_formal_test ? "; a late formal test run adds 0.15" : "") + ")"));
    const tvr = found.tvr;
    const tvrItem = el("li", "TVR " + tvr.value + ": " + tvr.verification_runs + " verification run(s)" +
      (tvr.wrote_test_file ? ", wrote a test file" : ", wrote no test file"));
    if (tvr.deciding_run) {
      tvrItem.appendChild(document.createTextNode("; decided by the last run, outcome " +
        tvr.deciding_run.outcome + ": "));
      tvrItem.appendChild(el("code", tvr.deciding_run.command));
      tvrItem.appendChild(document.createTextNode(" "));
      tvrItem.appendChild(jump(tvr.deciding_run.message, "turn " + tvr.deciding_run.turn));
    }
    list.appendChild(tvrItem);
    const dpi = found.dpi;
    const fired = dpi.penalties.map(function (p) { return p.rule + " −" + p.penalty; });
    list.appendChild(el("li", "DPI " + dpi.value + ": " + (fired.length ? fired.join("; ") : "no penalty fired")));
    found.loops.forEach(function (loop) {
      const item = el("li", "loop: " + loop.calls + " identical " + loop.tool + " calls on " +
        loop.targets.join(", ") + ", ");
      item.appendChild(jump(loop.from.message, "turn " + loop.from.turn));
      item.appendChild(document.createTextNode(" to "));
      item.appendChild(jump(loop.to.message, "turn " + loop.to.turn));
      list.appendChild(item);
    });
    list.appendChild(el("li", "STP " + found.stp_value + ": " + found.turns + " assistant turns"));
    if (found.fec_edits.length) {
      list.appendChild(el("li", "FEC: edits per file — " + found.fec_edits.map(function (e) {
        return e[0] + " ×" + e[1];
      }).join(", ")));
    }
    box.appendChild(list);
    return box;
  }

  // The diagnosis: both scores, then each detection with its evidence (message links).
  function diagnosisBox(found, prefix) {
    const box = el("div", null, "diagnosis");
    box.appendChild(el("h3", "Diagnosis"));
    const scores = [];
    if (found.trajectory_score !== undefined) scores.push("trajectory_score " + show(found.trajectory_score));
    if (found.task_completion_score !== undefined) {
      scores.push("task_completion_score " + show(found.task_completion_score));
    }
    if (found.profile) scores.push("profile " + found.profile);
    box.appendChild(el("p", scores.join(" · ")));
    const detections = found.detections || [];
    if (!detections.length) {
      box.appendChild(el("p", "No detector fired."));
      return box;
    }
    const list = el("ul");
    detections.forEach(function (d) {
      const item = el("li", null, "detection severity-" + d.severity);
      item.appendChild(el("strong", d.severity + " "));
      item.appendChild(el("span", (d.title || d.detector) + " (" + d.detector + ", confidence " +
        show(d.confidence) + (d.penalty !== undefined ? ", penalty " + show(d.penalty) : "") + ")"));
      if (d.description) item.appendChild(el("div", d.description));
      const evidence = d.evidence || {};
      (evidence.snippets || []).forEach(function (text) { item.appendChild(el("code", text)); });
      if (prefix && (evidence.messages || []).length) {
        const links = el("div", "evidence: ", "evidence");
        evidence.messages.forEach(function (index) {
          links.appendChild(jump(index, "#" + index, prefix));
          links.appendChild(document.createTextNode(" "));
        });
        item.appendChild(links);
      }
      list.appendChild(item);
    });
    box.appendChild(list);
    return box;
  }

  function show(value) {
    return value === null || value === undefined ? "–" : String(value);
  }

  function messages(record, prefix) {
    const box = el("div", null, "messages");
    // Tool results, and the terminal screens Terminus-2 sends back as user messages after
    // the task, start collapsed when long.
    let firstUser = -1;
    record.messages.forEach(function (message, index) {
      if (firstUser < 0 && message.role === "user") firstUser = index;
    });
    record.messages.forEach(function (message, index) {
      const at = message.index === undefined ? index : message.index;
      const item = el("div", null, "msg role-" + message.role);
      if (prefix && message.role !== "note") item.id = prefix + at;
      item.appendChild(el("div", (message.role === "note" ? "" : "#" + at + " ") + message.role, "msg-head"));
      if (message.reasoning) {
        const thinking = el("details");
        thinking.appendChild(el("summary", "reasoning"));
        thinking.appendChild(el("pre", message.reasoning));
        item.appendChild(thinking);
      }
      const text = message.content === null || message.content === undefined ? "" : String(message.content);
      const observation = message.role === "tool" || (message.role === "user" && index > firstUser);
      if (observation && text.length > LONG) {
        const folded = el("details", null, "observation");
        folded.appendChild(el("summary", (message.role === "tool" ? "tool result" : "observation") +
          " (" + text.length + " characters)"));
        folded.appendChild(el("pre", text));
        item.appendChild(folded);
      } else if (text) {
        item.appendChild(el("pre", text));
      }
      (message.tool_calls || []).forEach(function (call) {
        const callBox = el("div", null, "tool-call");
        callBox.appendChild(el("span", "→ " + call.name, "tool-name"));
        callBox.appendChild(el("pre", call.arguments));
        item.appendChild(callBox);
      });
      box.appendChild(item);
    });
    return box;
  }

  function open(key) {
    const example = EXAMPLES[key];
    body.replaceChildren();
    if (!example) {
      title.textContent = key;
      body.appendChild(el("p", "This example is not embedded in the report."));
      dialog.showModal();
      return;
    }
    title.textContent = example.instance_id;
    body.appendChild(facts(example));
    if (!example.found) {
      body.appendChild(el("p", "not in the curated output: the trajectory was " +
        (example.decision === "rejected" ? "rejected (" + (example.reason || "no reason") + ")" :
          "not found in im.jsonl") + ", so only its scores are shown.", "missing"));
    } else {
      body.appendChild(reasons(example.reasons));
      if (example.diagnosis) body.appendChild(diagnosisBox(example.diagnosis, "m-"));
      body.appendChild(el("h3", "Main agent"));
      body.appendChild(messages(example.main, "m-"));
      example.subagents.forEach(function (sub, index) {
        const folded = el("details", null, "subagent");
        const prefix = "s" + index + "-";
        folded.appendChild(el("summary", "subagent " + (index + 1) + " (" + sub.messages.length + " messages)"));
        if (sub.diagnosis) folded.appendChild(diagnosisBox(sub.diagnosis, prefix));
        folded.appendChild(messages(sub, prefix));
        body.appendChild(folded);
      });
    }
    if (!example.found && example.diagnosis) body.appendChild(diagnosisBox(example.diagnosis, null));
    const scores = el("details", null, "scores");
    scores.appendChild(el("summary", "all scores"));
    const table = el("table", null, "compact");
    Object.keys(example.score).forEach(function (name) {
      const row = el("tr");
      row.appendChild(el("td", name));
      row.appendChild(el("td", example.score[name] === null ? "–" : example.score[name]));
      table.appendChild(row);
    });
    scores.appendChild(table);
    body.appendChild(scores);
    dialog.showModal();
  }

  document.addEventListener("click", function (event) {
    const button = event.target.closest("button.example");
    if (button) open(button.getAttribute("data-example"));
  });
  document.getElementById("viewer-close").addEventListener("click", function () { dialog.close(); });
})();
