// The endpoint's own UI: YASGUI over this origin's /query, the saved queries, tool search, the prefixes.
// Served as a file (never inline): the page's Content-Security-Policy runs scripts from this origin only.
const base = window.location.origin;
const ENDPOINT = base + "/query";  // the only endpoint this page asks, whatever a link or a saved tab says
const Yasqe = Yasgui.Yasqe || window.Yasqe;
const Yasr = Yasgui.Yasr || window.Yasr;

// The start tab (and every new tab) holds this; /query declares the project's prefixes by itself.
const EXAMPLE = `# Tools and what they depend on (declared or inferred).
# tk:, rdfs:, dcterms: and the other project prefixes need no PREFIX line here.
SELECT ?tool (COUNT(DISTINCT ?d) AS ?dependencies)
       (GROUP_CONCAT(DISTINCT ?needs; separator=", ") AS ?dependsOn)
WHERE {
  ?t a tk:Tool ; tk:identifier ?tool .
  OPTIONAL { ?t tk:dependsOn ?d . ?d tk:identifier ?needs }
}
GROUP BY ?tool
ORDER BY DESC(?dependencies) ?tool
LIMIT 100
`;

function escapeHtml(text) {
  return String(text).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
}

// Every IRI opens its page on this endpoint (/resource), never the IRI itself: the store's IRIs are under
// w3id.org, which knows nothing of this store, and an IRI from a catalog may be javascript: or worse.
function resourceHref(iri) {
  return base + "/resource?iri=" + encodeURIComponent(iri);
}

// An IRI as prefix:local when a known namespace covers it and the rest is a plain local name.
function shorten(iri, prefixes) {
  let best = null;
  for (const [prefix, ns] of Object.entries(prefixes || {})) {
    if (ns && iri.startsWith(ns) && (!best || ns.length > best[1].length)) best = [prefix, ns];
  }
  if (!best) return null;
  const local = iri.slice(best[1].length);
  return /^[A-Za-z0-9_]([\w.-]*\w)?$|^$/.test(local) ? `${best[0]}:${local}` : null;
}

const NUMERIC = /#(integer|decimal|double|float|long|int|short|byte|nonNegativeInteger|positiveInteger|unsignedInt|unsignedLong)$/;

// YASR's table: plain values. A literal shows its lexical form (its datatype or language is the tooltip,
// a language also a small grey tag); an IRI shows as prefix:local with the full IRI as tooltip.
function patchTable(prefixesOfProject) {
  const Table = Yasr.plugins.table;
  Table.prototype.getCellContent = function (binding, prefixes) {
    prefixes = Object.assign({}, prefixesOfProject, prefixes);
    const value = escapeHtml(binding.value);
    if (binding.type === "uri") {
      const short = shorten(binding.value, prefixes);
      // A long IRI may wrap after a slash or a hash rather than widen the table past the window.
      const shown = short ? escapeHtml(short) : value.replace(/([/#])(?=.)/g, "$1<wbr>");
      return `<div><span><a class="iri" href="${escapeHtml(resourceHref(binding.value))}" title="${value}">${shown}</a></span></div>`;
    }
    if (binding.type === "bnode") return `<div><span class="nonIri">_:${value}</span></div>`;
    const lang = binding["xml:lang"];
    const datatype = binding.datatype;
    const classes = ["nonIri", "literal"];
    let hint = "";
    if (lang) hint = `language: ${lang}`;
    else if (datatype) {
      hint = shorten(datatype, prefixes) || datatype;
      if (NUMERIC.test(datatype)) classes.push("number");
    }
    const title = hint ? ` title="${escapeHtml(hint)}"` : "";
    const tag = lang ? `<span class="lang">@${escapeHtml(lang)}</span>` : "";
    return `<div><span class="${classes.join(" ")}"${title}>${value}</span>${tag}</div>`;
  };
  // The row-number column: wide enough for its digits plus the cell padding given back in the CSS above.
  Table.prototype.getSizeFirstColumn = function () {
    const rows = (this.yasr.results && this.yasr.results.getBindings()) || [];
    return 8 * String(rows.length).length + 16;
  };
  // Long text wraps instead of being cut to "..." (the table's Ellipse switch turns cutting back on).
  const draw = Table.prototype.draw;
  Table.prototype.draw = function (config) {
    return draw.call(this, Object.assign({ isEllipsed: false }, config));
  };
}

// The editor knows the project's prefixes as if declared: no "Prefix 'tk' is not defined" marks, and
// no PREFIX line added when one is typed (the endpoint adds the declarations a query leaves out).
function predeclare(prefixes) {
  const factory = Yasqe.modes && Yasqe.modes.sparql11;
  if (!factory || !Yasqe.defineMode) return;
  Yasqe.defineMode("sparql11", function (config, parserConfig) {
    const mode = factory(config, parserConfig);
    const start = mode.startState;
    mode.startState = function () {
      const state = start.apply(this, arguments);
      state.prefixes = Object.assign({}, prefixes, state.prefixes);
      return state;
    };
    return mode;
  });
}

// A YASQE completer over a fixed list of IRIs: those starting with what is typed (tk:Too -> tk:Tool), or,
// when nothing matches so, those whose local name contains it; shown as prefix:local by the completer.
function localTerms(completer, iris) {
  if (!completer) return;
  completer.autoShow = true;  // a local list costs nothing to ask: show it as one types, as prefixes are
  completer.get = (yasqe, token) => {
    const typed = (token && token.autocompletionString) || "";
    let found = iris.filter(iri => iri.startsWith(typed));
    if (!found.length) {
      const word = typed.replace(/^.*[#/:]/, "").toLowerCase();
      found = iris.filter(iri => iri.replace(/^.*[#/]/, "").toLowerCase().includes(word));
    }
    return Promise.resolve(found);
  };
}

// The tab asks ENDPOINT only: a foreign endpoint named in a link (#endpoint=...) or in a tab saved by an
// older page is replaced before YASGUI keeps it, and again before each query is sent. The page's CSP
// (connect-src 'self') refuses any other address anyway.
function ownEndpointOnly(tabConfig) {
  tabConfig.requestConfig = Object.assign({}, tabConfig.requestConfig, { endpoint: ENDPOINT });
  return tabConfig;
}

function start(prefixes, terms) {
  const local = Object.entries(prefixes).map(([p, ns]) => `${p}: <${ns}>`).sort();
  // YASQE would look prefixes up on prefix.cc and terms on LOV: this page stays on the endpoint's host.
  // Prefix completion (after "PREFIX ") offers the project's own list; the LOV completers are dropped.
  if (Yasqe.Autocompleters.prefixes) Yasqe.Autocompleters.prefixes.get = local;
  // Classes (after "a") and properties complete from the ontology's own terms (/ontology/terms), not from LOV.
  localTerms(Yasqe.Autocompleters.class, terms.classes || []);
  localTerms(Yasqe.Autocompleters.property, terms.properties || []);
  const kept = ["variables", "prefixes", "class", "property"];
  Yasqe.defaults.autocompleters = Yasqe.defaults.autocompleters.filter(n => kept.includes(n));
  predeclare(prefixes);
  patchTable(prefixes);

  const yasgui = new Yasgui(document.getElementById("yasgui"), {
    // A new key: tabs saved by an older page (without the example or the prefixes) are not restored.
    persistenceId: "toolkg-ui-v2",
    requestConfig: { endpoint: ENDPOINT, method: "POST" },
    copyEndpointOnNewTab: true,
    populateFromUrl: ownEndpointOnly,
    endpointCatalogueOptions: { getData: () => [{ endpoint: ENDPOINT }], keys: [] },
    yasqe: { value: EXAMPLE },
    yasr: { prefixes },
  });
  window.toolkgYasgui = yasgui;
  const pin = tab => { if (tab && tab.getEndpoint() !== ENDPOINT) tab.setEndpoint(ENDPOINT); };
  Object.values(yasgui._tabs || {}).forEach(pin);
  yasgui.on("tabAdd", (y, id) => pin(y.getTab(id)));
  yasgui.on("queryBefore", (y, tab) => pin(tab));
  const first = yasgui.getTab();
  if (first && first.getQuery().trim() === EXAMPLE.trim()) first.query();  // cheap, and shows the current snapshot

  const list = document.getElementById("prefixes");
  for (const [p, ns] of Object.entries(prefixes)) {
    const term = document.createElement("dt");
    term.textContent = p + ":";
    const iri = document.createElement("dd");
    iri.textContent = ns;
    iri.title = ns;
    list.append(term, iri);
  }
  return yasgui;
}

// One tab per saved query, reused when the query is run again (with other values).
function showInTab(yasgui, name, query) {
  const tabs = yasgui._tabs || {};
  let tab = Object.values(tabs).find(t => t.getName() === name);
  if (tab) yasgui.selectTabId(tab.getId());
  else tab = yasgui.addTab(true, { name, yasqe: { value: query } });
  tab.setQuery(query);
  const editor = tab.getYasqe && tab.getYasqe();
  if (editor && editor.collapsePrefixes) editor.collapsePrefixes(true);  // predefined anyway: fold them away
  return tab.query();
}

function savedQueryForm(yasgui, q) {
  const form = document.createElement("form");
  form.className = "saved";
  form.dataset.form = q.name;
  const title = document.createElement("button");
  title.type = "submit";
  title.className = "title";
  title.dataset.query = q.name;
  title.title = q.params.length ? "run (with the values filled in below)" : "run";
  const name = document.createElement("b");
  name.textContent = q.name;
  const about = document.createElement("small");
  about.textContent = q.description;
  title.append(name, about);
  form.append(title);
  const error = document.createElement("p");
  error.className = "error";
  error.setAttribute("role", "alert");
  if (q.params.length) {
    const fields = document.createElement("div");
    fields.className = "params";
    q.params.forEach((p, index) => {
      const id = `param-${q.name}-${p.name}`;
      const label = document.createElement("label");
      label.htmlFor = id;
      label.textContent = p.name;
      const input = document.createElement("input");
      input.id = id;
      input.name = p.name;
      input.autocomplete = "off";
      input.setAttribute("aria-describedby", id + "-help");
      fields.append(label, input);
      if (index === q.params.length - 1) {
        const run = document.createElement("button");
        run.type = "submit";
        run.className = "run";
        run.textContent = "Run";
        fields.append(run);
      }
      const help = document.createElement("p");
      help.className = "help";
      help.id = id + "-help";
      help.textContent = p.help;
      fields.append(help);
    });
    fields.append(error);
    form.append(fields);
  } else {
    form.append(error);
  }
  form.addEventListener("submit", async event => {
    event.preventDefault();
    error.textContent = "";
    const values = [...new FormData(form)].filter(([, v]) => String(v).trim() !== "");
    let query = q.query;
    if (values.length) {  // the endpoint writes the values into the query as escaped literals
      const url = `${base}/saved-queries/render?` + new URLSearchParams([["name", q.name], ...values.map(([k, v]) => [k, String(v).trim()])]);
      try {
        const response = await fetch(url);
        const body = await response.json().catch(() => ({}));
        if (!response.ok || typeof body.query !== "string") {
          error.textContent = body.error || `could not render the query (HTTP ${response.status})`;
          return;
        }
        query = body.query;
      } catch (exc) {
        error.textContent = `could not render the query: ${exc}`;
        return;
      }
    }
    document.querySelectorAll("form.saved.current").forEach(f => f.classList.remove("current"));
    form.classList.add("current");
    showInTab(yasgui, q.name, query);
  });
  return form;
}

// Tool search over /search: each tool links to its page, with the tools to call before it.
function toolLink(id, iri) {
  const link = document.createElement("a");
  link.href = resourceHref(iri);
  link.textContent = id;
  return link;
}

function showSearch(answer) {
  const list = document.getElementById("search-results");
  list.textContent = "";
  for (const tool of answer.tools || []) {
    const item = document.createElement("li");
    item.className = "tool";
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = typeof tool.score === "number" ? tool.score.toFixed(3) : "";
    score.title = tool.why || "";
    const about = document.createElement("small");
    about.textContent = tool.description || "";
    item.append(toolLink(tool.id, tool.iri), score, about);
    if ((tool.call_first || []).length) {
      const first = document.createElement("div");
      first.className = "first";
      first.append("call first: ");
      tool.call_first.forEach((c, i) => first.append(...(i ? [", "] : []), toolLink(c.tool, c.iri)));
      item.append(first);
    }
    list.append(item);
  }
  if (answer.note || !(answer.tools || []).length) {
    const note = document.createElement("li");
    note.className = "note";
    note.textContent = answer.note || "No tool matches this request.";
    list.append(note);
  }
}

document.getElementById("search").addEventListener("submit", async event => {
  event.preventDefault();
  const form = event.target;
  const error = document.getElementById("search-error");
  error.textContent = "";
  const params = new URLSearchParams([["q", form.q.value.trim()], ["k", form.k.value || "5"]]);
  const list = document.getElementById("search-results");
  list.textContent = "";
  const waiting = document.createElement("li");
  waiting.className = "note";
  waiting.textContent = "searching... (the first search loads the index)";
  list.append(waiting);
  try {
    const response = await fetch(`${base}/search?${params}`);
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      list.textContent = "";
      error.textContent = body.error || `search failed (HTTP ${response.status})`;
      return;
    }
    showSearch(body);
  } catch (exc) {
    list.textContent = "";
    error.textContent = `search failed: ${exc}`;
  }
});

const json = path => fetch(base + path).then(r => (r.ok ? r.json() : {})).catch(() => ({}));

Promise.all([json("/prefixes"), json("/ontology/terms")])
  .then(([prefixes, terms]) => {
    const yasgui = start(prefixes, terms);
    return fetch(base + "/saved-queries").then(r => r.json()).then(queries => {
      const list = document.getElementById("saved");
      list.textContent = "";
      for (const q of queries) list.append(savedQueryForm(yasgui, q));
    });
  });

fetch(base + "/status").then(r => r.json()).then(s => {
  document.getElementById("status").textContent =
    `read-only SPARQL endpoint at ${base}/query · snapshot ${s.snapshot} · query timeout ${s.query_timeout_s}s`;
});
