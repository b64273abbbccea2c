// Drives Debian's chromium (through playwright-core) over a run's report.html: the pod explorer
// lists every pod, filters, sorts, and a click on a pod opens its attempts and, when the run has
// explain.jsonl, the per-node filter verdicts and per-plugin scores. Exit 1 on any difference.
//   node scripts/browser-test-report.mjs RUN_DIR SCREENSHOT.png
// Called by scripts/browser-test-report.sh, which installs what it needs.
import { createRequire } from 'node:module';
import { readFileSync, existsSync } from 'node:fs';
import { resolve } from 'node:path';

const require = createRequire(process.env.KSIM_PW_DIR + '/');
const { chromium } = require('playwright-core');
const [dir, shot] = process.argv.slice(2);
const fail = (m) => { console.error('FAIL: ' + m); process.exitCode = 1; };

const pods = readFileSync(resolve(dir, 'pods.csv'), 'utf8').trim().split('\n').length - 1;
const explained = existsSync(resolve(dir, 'explain.jsonl'));
const browser = await chromium.launch({
  executablePath: process.env.KSIM_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const requests = [];
  page.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) requests.push(r.url()); });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('file://' + resolve(dir, 'report.html'));
  const count = await page.textContent('#px-count');
  if (count !== `${pods} of ${pods} pods`) fail(`count line "${count}", want ${pods} of ${pods} pods`);
  const rows = await page.$$eval('#px-body tr', (t) => t.length);
  if (rows !== Math.min(50, pods)) fail(`${rows} rows on the first page`);
  // Pending first: the first row is a pod still waiting, when there is one.
  const firstOutcome = await page.textContent('#px-body tr:first-child td:nth-child(2)');
  const anyPending = readFileSync(resolve(dir, 'pods.csv'), 'utf8').includes(',pending,');
  if (anyPending && firstOutcome !== 'pending') fail(`first row is ${firstOutcome}, not a pending pod`);
  const firstPod = await page.textContent('#px-body tr:first-child td:first-child');
  // Filtering by the pod's name keeps it.
  await page.fill('#px-q', firstPod);
  const filtered = await page.textContent('#px-count');
  if (!filtered.startsWith('1 of') && !filtered.match(/^\d+ of/)) fail(`filter count "${filtered}"`);
  if (await page.textContent('#px-body tr:first-child td:first-child') !== firstPod) fail('filter lost the pod');
  // Click it: its history opens.
  await page.click('#px-body tr:first-child');
  await page.waitForSelector('#px-detail:not([hidden])', { timeout: 5000 });
  const title = await page.textContent('#px-title');
  if (title !== firstPod) fail(`detail title "${title}", want ${firstPod}`);
  const attempts = await page.$$eval('#px-detail .px-attempts tr', (t) => t.length - 1);
  if (attempts < 1) fail('no attempt rows in the detail');
  const detail = await page.textContent('#px-detail');
  if (explained) {
    const verdicts = await page.$$eval('#px-detail .px-filter tr', (t) => t.length - 1);
    if (verdicts < 1) fail('no per-node filter verdicts although the run has explain.jsonl');
    if (!/Insufficient|node\(s\)|Success/.test(detail)) fail('no filter reason in the detail');
  }
  if (explained) {
    // A pod scheduled among several feasible nodes: its score table, one row per node, each
    // row's weighted plugin scores adding up to its total (explain.jsonl writes them
    // column-wise; the page expands them).
    const lines = readFileSync(resolve(dir, 'explain.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const scored = lines.find((r) => r.result === 'Scheduled' && r.feasible > 1);
    if (scored) {
      await page.fill('#px-q', scored.pod);
      await page.click('#px-body tr:first-child');
      await page.waitForSelector('#px-detail .px-scores');
      const table = await page.$$eval('#px-detail .px-scores tr', (t) => t.slice(1).map((r) =>
        [...r.querySelectorAll('td')].slice(1).map((c) => c.textContent)));
      if (table.length < scored.feasible) fail(`${table.length} score rows for ${scored.feasible} feasible nodes`);
      for (const row of table) {
        const cells = row.map((c) => +c);
        const total = cells.pop();
        if (cells.some(Number.isNaN) || cells.reduce((a, b) => a + b, 0) !== total) fail(`score row ${row} does not add up`);
      }
      console.log(`score table of ${scored.pod}: ${table.length} nodes, rows add up`);
    }
  }
  // Sorting by attempts (twice: descending) puts the most-tried pod first.
  await page.fill('#px-q', '');
  await page.click('#px-head th:nth-child(5)');
  await page.click('#px-head th:nth-child(5)');
  const top = +(await page.textContent('#px-body tr:first-child td:nth-child(5)'));
  const max = Math.max(...readFileSync(resolve(dir, 'pods.csv'), 'utf8').trim().split('\n').slice(1)
    .map((l) => { const m = l.match(/,(\d+),[^,]*,(running|succeeded|deleted|pending|preempted|failed|stalled|unserved),/); return m ? +m[1] : 0; }));
  if (top !== max) fail(`sorted by attempts, first row has ${top}, max is ${max}`);
  // Back to the clicked pod for the screenshot.
  await page.fill('#px-q', firstPod);
  await page.click('#px-body tr:first-child');
  await page.waitForSelector('#px-detail:not([hidden])');
  const explorer = await page.$('#explorer');
  await explorer.screenshot({ path: shot });
  if (requests.length) fail('the page fetched ' + requests.join(', '));
  if (errors.length) fail('script errors: ' + errors.join('; '));
  console.log(`pod explorer: ${pods} pods listed, ${firstPod} clicked: ${attempts} attempt(s)` +
    (explained ? ', per-node verdicts shown' : '') + `; screenshot ${shot}`);
} finally {
  await browser.close();
}
