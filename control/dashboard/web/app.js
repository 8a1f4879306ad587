// The gpool dashboard: reads the coordinator's JSON API (/api/v1/<Request>,
// docs/protocol.md) every POLL_MS and renders the page the path names. It is
// read-only: the API it calls answers only read requests.
//
// Every figure carries a data-metric attribute (and its node, queue, job or
// pool in data-node, data-queue, data-job, data-pool on it or an ancestor),
// so tests and scripts can read the page's numbers without parsing layout.
//
// The DOM is built with h() from text nodes only (never innerHTML), so names
// and messages from the cluster cannot inject markup.
'use strict';

const POLL_MS = 2000;
const CREDENTIAL = 'gpool.bearer';  // sessionStorage key: this tab only
const PAGES = ['overview', 'nodes', 'queues', 'jobs', 'events'];

// --- Credentials -------------------------------------------------------------
//
// A secured cluster's dashboard signs in with an API token (`gpool token
// create --scope read`): POST /ui/session trades it for a session cookie
// that is HttpOnly (this script never holds a credential after sign-in),
// Secure and SameSite=Strict, and reads only. The token itself is kept
// nowhere. An --insecure cluster has no users and no sessions: its cluster
// token is sent as a bearer from this tab's sessionStorage, as before.

function bearer() { return sessionStorage.getItem(CREDENTIAL) || ''; }
let signedIn = false;

async function signIn(token) {
  const response = await fetch('/ui/session', {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ token }),
    cache: 'no-store', credentials: 'same-origin',
  });
  if (response.status === 409) {  // no sessions here: an --insecure cluster's token
    sessionStorage.setItem(CREDENTIAL, token);
    return '';
  }
  const body = await response.json().catch(() => ({}));
  if (!response.ok) return body.error ? body.error.message : `HTTP ${response.status}`;
  signedIn = true;
  return '';
}

async function signOut() {
  sessionStorage.removeItem(CREDENTIAL);
  signedIn = false;
  await fetch('/ui/session/end', { method: 'POST', cache: 'no-store', credentials: 'same-origin' }).catch(() => {});
}

// A token in the URL fragment (#token=...) is for scripts and headless
// browsers, which cannot type into the login box. Browsers never send the
// fragment to the server; it is taken off the address bar at once (so it
// does not stay in history or get copied along) and traded for a session.
async function adoptFragmentCredential() {
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (!fragment.has('token')) return '';
  const token = fragment.get('token');
  history.replaceState(null, '', location.pathname + location.search);
  return signIn(token);
}

class Unauthorized extends Error {}

async function api(type, params = {}) {
  const query = new URLSearchParams(params).toString();
  const headers = {};
  if (bearer()) headers.Authorization = 'Bearer ' + bearer();
  const response = await fetch('/api/v1/' + type + (query ? '?' + query : ''),
                               { headers, cache: 'no-store', credentials: 'same-origin' });
  const body = await response.json().catch(() => ({}));
  const error = body.error ? `${body.error.code}: ${body.error.message}` : `HTTP ${response.status}`;
  if (response.status === 401) throw new Unauthorized(error);
  if (!response.ok) throw new Error(`${type}: ${error}`);
  signedIn = signedIn || !bearer();
  return body;
}

// --- DOM helpers -------------------------------------------------------------

function h(tag, attrs, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name === 'class') element.className = value;
    else if (name === 'onclick') element.addEventListener('click', value);
    else if (name === 'style') Object.assign(element.style, value);  // CSSOM: allowed by the CSP
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    element.append(child instanceof Node ? child : String(child));
  }
  return element;
}

function card(metric, label, value, attrs = {}) {
  return h('div', { class: 'card', ...attrs },
    h('div', { class: 'figure', 'data-metric': metric }, value),
    h('div', { class: 'label' }, label));
}

function table(headings, rows) {
  return h('table', {}, h('thead', {}, h('tr', {}, headings.map((t) => h('th', {}, t)))), h('tbody', {}, rows));
}

function percent(part, whole) { return whole > 0 ? Math.round((100 * part) / whole) + '%' : '—'; }

function ago(ms) {
  if (!ms) return '—';
  const s = Math.max(0, Math.round((Date.now() - ms) / 1000));
  if (s < 90) return s + 's ago';
  if (s < 5400) return Math.round(s / 60) + 'm ago';
  if (s < 129600) return Math.round(s / 3600) + 'h ago';
  return Math.round(s / 86400) + 'd ago';
}

function gib(mib) { return (mib / 1024).toFixed(mib % 1024 ? 1 : 0) + ' GiB'; }

// A quota amount in its unit: cpu in milli-CPU, memory in MiB, GPUs counted.
function amount(resource, value) {
  if (resource === 'cpu') return (value / 1000).toString();
  if (resource === 'memory') return gib(value);
  return String(value);
}

// --- GPUs --------------------------------------------------------------------

// A device's allocation: held whole by a task, MIG instances, shares (or
// cores) held by tenants, or free.
function allocation(device) {
  if (device.task) return 'whole';
  const tenants = device.tenants || [];
  if (tenants.some((t) => t.grant && t.grant.mig_profile)) return 'mig';
  return tenants.length ? 'shared' : 'free';
}

// Each GPU counts once on the overview: unhealthy first (whatever holds it,
// nothing new goes there), then by allocation.
function gpuState(device) { return device.healthy === false ? 'unhealthy' : allocation(device); }

function nodeState(node) { return (node.state || '').split(',')[0]; }

// Free GPUs on nodes that can take work (Ready, not cordoned), split into
// those on wholly free nodes and those on partly used nodes: the second
// kind only fits jobs smaller than a node (fragmentation).
function fragmentation(nodes) {
  let onFreeNodes = 0, onPartNodes = 0, largest = 0;
  for (const node of nodes) {
    if (nodeState(node) !== 'Ready' || node.cordoned) continue;
    const devices = node.devices || [];
    const free = devices.filter((d) => gpuState(d) === 'free').length;
    if (free === devices.length) onFreeNodes += free; else onPartNodes += free;
    largest = Math.max(largest, free);
  }
  return { onFreeNodes, onPartNodes, largest };
}

// --- Pages -------------------------------------------------------------------

async function overviewPage() {
  const [status, { nodes = [] }] = await Promise.all([api('ClusterStatus'), api('ListNodes', { devices: true })]);
  const gpus = { whole: 0, shared: 0, mig: 0, free: 0, unhealthy: 0 };
  const states = { Ready: 0, NotReady: 0, Lost: 0 };
  const pools = {};
  let total = 0, cordoned = 0;
  for (const node of nodes) {
    states[nodeState(node)] = (states[nodeState(node)] || 0) + 1;
    if (node.cordoned) cordoned++;
    const pool = (pools[node.pool || 'public'] ||= { nodes: 0, gpus: 0, free: 0 });
    pool.nodes++;
    for (const device of node.devices || []) {
      total++;
      gpus[gpuState(device)]++;
      pool.gpus++;
      if (gpuState(device) === 'free') pool.free++;
    }
  }
  const allocated = gpus.whole + gpus.shared + gpus.mig;
  const frag = fragmentation(nodes);
  const freeTotal = frag.onFreeNodes + frag.onPartNodes;
  return h('div', {},
    h('h2', {}, 'GPUs'),
    h('div', { class: 'cards' },
      card('gpus-total', 'GPUs', total),
      card('gpus-whole', 'held whole', gpus.whole),
      card('gpus-shared', 'shared', gpus.shared),
      card('gpus-mig', 'MIG', gpus.mig),
      card('gpus-free', 'free', gpus.free),
      card('gpus-unhealthy', 'unhealthy', gpus.unhealthy),
      card('allocation-ratio', 'allocated', percent(allocated, total))),
    h('div', { class: 'stack', title: 'GPUs by state' },
      Object.entries(gpus).filter(([, n]) => n > 0).map(([state, n]) =>
        h('span', { class: 'segment ' + state, style: { width: (100 * n) / total + '%' } }, `${n} ${state}`))),
    h('h2', {}, 'Fragmentation'),
    h('div', { class: 'cards' },
      card('free-on-free-nodes', 'free GPUs on idle nodes', frag.onFreeNodes),
      card('free-on-partial-nodes', 'free GPUs on partly used nodes', frag.onPartNodes),
      card('fragmentation', 'of free GPUs are fragmented', percent(frag.onPartNodes, freeTotal)),
      card('largest-free-block', 'most free GPUs on one node', frag.largest)),
    h('h2', {}, 'Nodes'),
    h('div', { class: 'cards' },
      card('nodes-total', 'nodes', nodes.length),
      Object.entries(states).map(([state, n]) => card('nodes-' + state, state, n)),
      card('nodes-cordoned', 'cordoned', cordoned)),
    h('h2', {}, 'Pools'),
    h('div', { class: 'cards' },
      Object.entries(pools).sort().map(([name, pool]) =>
        h('div', { class: 'card', 'data-pool': name },
          h('div', { class: 'figure' }, h('span', { 'data-metric': 'pool-gpus' }, pool.gpus), ' GPUs'),
          h('div', { class: 'label' }, `${name}: `, h('span', { 'data-metric': 'pool-nodes' }, pool.nodes),
            ' nodes, ', h('span', { 'data-metric': 'pool-free' }, pool.free), ' free')))),
    h('h2', {}, 'Jobs and replication'),
    h('div', { class: 'cards' },
      card('jobs-running', 'jobs running', status.jobs_running || 0),
      card('jobs-pending', 'jobs pending', status.jobs_pending || 0),
      card('replica-role', `replica ${status.replica_id}, term ${status.term || 0}`, status.role),
      card('commit-index', 'commit index', status.commit_index || 0)),
    status.disk_full ? h('p', { class: 'error', 'data-metric': 'disk-full' }, status.disk_error) : null);
}

function gpuCell(node, device) {
  const state = allocation(device);
  const tenants = device.tenants || [];
  let what = 'free';
  if (state === 'whole') what = 'task ' + device.task;
  else if (state === 'mig') what = tenants.map((t) => t.grant.mig_profile).join(' ');
  else if (state === 'shared') {
    const mib = tenants.reduce((sum, t) => sum + (t.grant.gpu_memory_mib || 0), 0);
    what = `${tenants.length} share${tenants.length === 1 ? '' : 's'}, ${Math.round(mib / 1024)}/` +
      `${Math.round((device.memory_mib || 0) / 1024)}G`;
  }
  const detail = [`GPU ${device.index} ${device.model || ''} ${gib(device.memory_mib || 0)}`,
    device.uuid, device.healthy === false ? 'UNHEALTHY' : 'healthy',
    device.task ? 'held whole by task ' + device.task : null,
    ...tenants.map((t) => `task ${t.task}: ` + (t.grant.mig_profile ? 'MIG ' + t.grant.mig_profile
      : `${gib(t.grant.gpu_memory_mib || 0)}, ${t.grant.gpu_compute_pct || 0}% compute ${t.grant.sharing_qos || ''}`))];
  return h('div', {
    class: 'gpu', 'data-gpu': `${node.name}/${device.index}`, 'data-state': state,
    'data-healthy': device.healthy !== false, 'data-tenants': tenants.length, title: detail.filter(Boolean).join('\n'),
  }, h('b', {}, 'GPU ', device.index), device.healthy === false ? ' ✕' : '', h('br'), what);
}

async function nodesPage() {
  const { nodes = [] } = await api('ListNodes', { devices: true });
  return h('div', {},
    h('p', { class: 'legend muted' }, 'GPUs:', h('span', { class: 'whole' }), 'whole',
      h('span', { class: 'shared' }), 'shared', h('span', { class: 'mig' }), 'MIG',
      h('span', { class: 'free' }), 'free', h('span', { class: 'unhealthy' }), 'unhealthy',
      ' — utilisation per GPU is on /metrics where the worker reads NVML.'),
    table(['Node', 'State', 'Pool', 'GPUs used', 'CPU', 'Memory', 'Tasks', 'Seen', 'Devices'],
      nodes.map((node) => h('tr', { 'data-node': node.name },
        h('td', {}, h('b', {}, node.name), h('div', { class: 'muted' }, node.hostname || '')),
        h('td', { class: 'state-' + nodeState(node) }, h('span', { 'data-metric': 'node-state' }, nodeState(node)),
          node.cordoned ? h('div', { class: 'muted' }, `cordoned (${node.cordon_reason || 'operator'})`) : null,
          (node.health || []).map((c) => h('div', { class: 'error' }, `${c.kind || ''} ${c.message || ''}`))),
        h('td', {}, node.pool || 'public', node.pool_queue ? ` (${node.pool_queue})` : ''),
        h('td', {}, h('span', { 'data-metric': 'node-gpus-used' }, node.gpus_used || 0), ' / ',
          h('span', { 'data-metric': 'node-gpus-total' }, node.gpus_total || 0)),
        h('td', {}, `${(node.cpu_milli_used || 0) / 1000} / ${(node.cpu_milli_total || 0) / 1000}`),
        h('td', {}, `${gib(node.memory_mib_used || 0)} / ${gib(node.memory_mib_total || 0)}`),
        h('td', { 'data-metric': 'node-tasks' }, node.tasks || 0),
        h('td', {}, ago(node.last_seen_ms)),
        h('td', {}, h('div', { class: 'gpus' }, (node.devices || []).map((d) => gpuCell(node, d))))))));
}

// Parents before children, depth first, siblings by name.
function queueTree(queues) {
  const children = {};
  for (const q of queues) (children[q.spec.parent || ''] ||= []).push(q);
  const names = new Set(queues.map((q) => q.spec.name));
  const ordered = [];
  const visit = (q, depth) => {
    ordered.push({ q, depth });
    for (const c of (children[q.spec.name] || []).sort((a, b) => a.spec.name.localeCompare(b.spec.name))) {
      if (c !== q) visit(c, depth + 1);
    }
  };
  for (const q of queues) if (q.spec.name === 'root' || !names.has(q.spec.parent)) visit(q, 0);
  return ordered;
}

// Resources in reading order: GPUs, GPUs by model, then the rest by name.
function resourceOrder(a, b) {
  const rank = (r) => (r === 'gpu' ? 0 : r.startsWith('gpu/') ? 1 : 2);
  return rank(a) - rank(b) || a.localeCompare(b);
}

// One resource of a queue: allocated as a bar against the larger of its
// capability and deserved share, deserved as a mark. Without either there
// is nothing to measure against, so no bar.
function quotaBar(q, resource) {
  const allocated = (q.allocated || {})[resource] || 0;
  const deserved = (q.spec.deserved || {})[resource];
  const capability = (q.spec.capability || {})[resource];
  const guarantee = (q.spec.guarantee || {})[resource];
  const limited = deserved !== undefined || capability !== undefined;
  const scale = Math.max(allocated, deserved || 0, capability || 0, 1);
  return h('div', { 'data-resource': resource },
    h('span', { class: 'bar' + (limited ? '' : ' none') },
      limited ? h('span', { class: 'fill' + (deserved !== undefined && allocated > deserved ? ' over' : ''),
        style: { width: (100 * allocated) / scale + '%' } }) : null,
      deserved !== undefined ? h('span', { class: 'mark', style: { left: (100 * deserved) / scale + '%' } }) : null),
    `${resource} `, h('span', { 'data-metric': 'queue-allocated' }, amount(resource, allocated)),
    h('span', { class: 'muted' },
      deserved !== undefined ? ` deserved ${amount(resource, deserved)}` : '',
      capability !== undefined ? ` cap ${amount(resource, capability)}` : '',
      guarantee !== undefined ? ` guaranteed ${amount(resource, guarantee)}` : '',
      limited ? '' : ' (no quota)'));
}

async function queuesPage() {
  const { queues = [] } = await api('ListQueues');
  return h('div', {},
    h('p', { class: 'muted' }, 'Bars: allocated (orange beyond the deserved share); the mark is the deserved share, ' +
      'the full width the larger of capability and deserved. cpu in CPUs.'),
    table(['Queue', 'Running', 'Pending', 'Pools', 'Allocated / deserved / capability'],
      queueTree(queues).map(({ q, depth }) => {
        const resources = [...new Set(['gpu', ...Object.keys(q.allocated || {}), ...Object.keys(q.spec.deserved || {}),
          ...Object.keys(q.spec.capability || {})])].sort(resourceOrder);
        return h('tr', { 'data-queue': q.spec.name },
          h('td', { style: { paddingLeft: 0.6 + 1.4 * depth + 'em' } }, q.spec.name),
          h('td', { 'data-metric': 'queue-running' }, q.jobs_running || 0),
          h('td', { 'data-metric': 'queue-pending' }, q.jobs_pending || 0),
          h('td', {}, (q.spec.pools || []).join(', ') || 'any'),
          h('td', {}, resources.map((r) => quotaBar(q, r))));
      })));
}

async function explainPanel(id) {
  const [explained, job] = await Promise.all([api('ExplainJob', { job_id: id }), api('GetJob', { job_id: id })]);
  const summary = explained.job;
  return h('div', { id: 'explain', 'data-explain': id },
    h('h2', {}, `Job ${id}: ${summary.name} — `, h('span', { 'data-metric': 'explain-state' }, summary.state)),
    h('p', {}, `queue ${summary.queue}, class ${summary.priority_class || 'medium'}, `,
      h('span', { 'data-metric': 'explain-jobs-ahead' }, explained.jobs_ahead || 0),
      ' pending jobs of its queue ahead of it'),
    (explained.reasons || []).length
      ? h('ul', {}, explained.reasons.map((r) => h('li', { 'data-metric': 'explain-reason' }, r)))
      : h('p', { class: 'muted' }, 'No pending reasons.'),
    h('h2', {}, 'Queue path'),
    table(['Queue', 'Allocated', 'Deserved', 'Capability'], (explained.queue_path || []).map((q) => {
      const show = (quota) => Object.entries(quota || {}).map(([r, v]) => `${r} ${amount(r, v)}`).join(', ') || '—';
      return h('tr', { 'data-queue': q.spec.name }, h('td', {}, q.spec.name), h('td', {}, show(q.allocated)),
        h('td', {}, show(q.spec.deserved)), h('td', {}, show(q.spec.capability)));
    })),
    h('h2', {}, 'Tasks'),
    table(['Task', 'State', 'Node', 'GPUs', 'Message'], (job.tasks || []).map((t) =>
      h('tr', {}, h('td', {}, `${t.group || ''} ${t.index ?? ''}`), h('td', { class: 'state-' + t.state }, t.state),
        h('td', {}, t.node || '—'), h('td', {}, (t.gpu_uuids || []).length), h('td', {}, t.message || '')))));
}

async function jobsPage(selected) {
  const [{ jobs = [] }, panel] = await Promise.all([
    api('ListJobs', { include_finished: true }),
    selected ? explainPanel(selected) : null,
  ]);
  jobs.sort((a, b) => b.job_id - a.job_id);
  return h('div', {},
    table(['Job', 'Name', 'Queue', 'State', 'Class', 'GPUs', 'Tasks', 'Submitted', 'Reason'],
      jobs.map((job) => h('tr', {
        class: 'clickable' + (String(job.job_id) === selected ? ' selected' : ''), 'data-job': job.job_id,
        onclick: () => navigate('/ui/jobs/' + job.job_id),
      },
      h('td', {}, job.job_id), h('td', {}, job.name), h('td', {}, job.queue),
      h('td', { class: 'state-' + job.state, 'data-metric': 'job-state' }, job.state),
      h('td', {}, job.priority_class || ''), h('td', { 'data-metric': 'job-gpus' }, job.gpus || 0),
      h('td', {}, `${job.tasks_running || 0} running / ${job.tasks_total || 0}`),
      h('td', {}, ago(job.submit_ms)),
      h('td', { 'data-metric': 'job-reason' }, job.reason || '')))),
    panel || h('p', { class: 'muted' }, 'Click a job for its explanation.'));
}

// Events arrive in commit order; the page keeps what it has read and asks
// only for newer ones (after_seq), as `gpool events --follow` does.
const events = { list: [], lastSeq: 0 };
const MAX_EVENTS = 2000;

function forgetEvents() {
  events.list = [];
  events.lastSeq = 0;
}

async function eventsPage() {
  for (let page = 0; page < 20; page++) {
    const reply = await api('ListEvents', { after_seq: events.lastSeq, limit: 1000 });
    events.list.push(...(reply.events || []));
    const last = reply.last_seq || events.lastSeq;
    if (!(reply.events || []).length || last === events.lastSeq) break;
    events.lastSeq = last;
  }
  if (events.list.length > MAX_EVENTS) events.list.splice(0, events.list.length - MAX_EVENTS);
  return h('div', {},
    h('p', {}, h('span', { 'data-metric': 'events-count' }, events.list.length), ' events, newest first.'),
    table(['Seq', 'Time', 'Kind', 'Node', 'Job', 'Severity', 'Actor', 'Message'],
      events.list.slice().reverse().map((e) => h('tr', { 'data-event': e.seq },
        h('td', {}, e.seq), h('td', {}, new Date(e.time_ms || 0).toLocaleString()), h('td', {}, e.kind),
        h('td', {}, e.node || ''), h('td', {}, e.job ? `${e.job}.${e.task || 0}` : ''), h('td', {}, e.severity || ''),
        h('td', {}, e.actor || ''), h('td', {}, [e.reason, e.message].filter(Boolean).join(': '))))));
}

// --- Routing and polling -------------------------------------------------------

function route() {
  const parts = location.pathname.replace(/^\/ui\/?/, '').split('/').filter(Boolean);
  const name = PAGES.includes(parts[0]) ? parts[0] : 'overview';
  return { name, arg: parts[1] };
}

const render = {
  overview: () => overviewPage(),
  nodes: () => nodesPage(),
  queues: () => queuesPage(),
  jobs: (arg) => jobsPage(arg),
  events: () => eventsPage(),
};

let timer = null;
let generation = 0;  // a newer refresh makes an older one's result stale
let refreshes = 0;   // views drawn since the page loaded (shown in the footer)

function setStatus(state, text) {
  const status = document.getElementById('status');
  status.dataset.status = state;
  status.textContent = text;
}

function showLogin(message) {
  document.getElementById('login').hidden = false;
  document.getElementById('login-error').textContent = message || '';
  document.getElementById('view').replaceChildren();
  setStatus('unauthenticated', 'sign in');
}

async function refresh() {
  const mine = ++generation;
  const started = performance.now();
  clearTimeout(timer);
  const { name, arg } = route();
  for (const link of document.querySelectorAll('nav a')) link.classList.toggle('active', link.dataset.nav === name);
  try {
    const content = await render[name](arg);
    if (mine !== generation) return;
    document.getElementById('login').hidden = true;
    document.getElementById('logout').hidden = !(signedIn || bearer());
    document.getElementById('view').replaceChildren(content);
    document.body.dataset.page = name;
    setStatus('ok', 'live');
    document.getElementById('updated').replaceChildren('Updated ' + new Date().toLocaleTimeString() + ' (',
      h('span', { 'data-metric': 'refreshes' }, ++refreshes), ' refreshes).');
  } catch (error) {
    if (mine !== generation) return;
    if (error instanceof Unauthorized) return showLogin(signedIn || bearer() ? error.message : '');  // no polling until signed in
    setStatus('error', error.message);  // keep the last view; try again
  }
  // A large cluster's replies take long to build and send: poll no more
  // than a fifth of the time, so many open dashboards cannot load the leader.
  timer = setTimeout(refresh, Math.max(POLL_MS, 5 * (performance.now() - started)));
}

function navigate(path) {
  history.pushState(null, '', path);
  refresh();
}

async function start() {
  const fragmentError = await adoptFragmentCredential();
  if (fragmentError) showLogin(fragmentError);
  for (const link of document.querySelectorAll('nav a')) {
    link.addEventListener('click', (event) => {
      event.preventDefault();
      navigate(link.getAttribute('href'));
    });
  }
  window.addEventListener('popstate', refresh);
  document.getElementById('login').addEventListener('submit', async (event) => {
    event.preventDefault();
    const token = document.getElementById('bearer').value.trim();
    document.getElementById('bearer').value = '';
    forgetEvents();  // another user may see other events
    const error = await signIn(token);
    if (error) return showLogin(error);
    refresh();
  });
  document.getElementById('logout').addEventListener('click', async () => {
    await signOut();
    forgetEvents();
    refresh();
  });
  if (!fragmentError) refresh();
}

start();
