// pages/failures.js: renders the scheduler's placement-failure metrics (AllocMetric) as reasons.
import { h } from '../dom.js';

/** reasons turns one AllocMetric into human-readable lines. */
export function reasons(m) {
  const out = [];
  if (!m) return out;
  const evaluated = `${m.NodesEvaluated || 0} of ${m.NodesInPool ?? '?'} nodes evaluated`;
  out.push(`${evaluated}; ${m.NodesFiltered || 0} filtered, ${m.NodesExhausted || 0} exhausted`);
  for (const [k, n] of Object.entries(m.ConstraintFiltered || {})) out.push(`constraint ${k} filtered ${n} node${n === 1 ? '' : 's'}`);
  for (const [k, n] of Object.entries(m.ClassFiltered || {})) out.push(`class ${k} filtered ${n} node${n === 1 ? '' : 's'}`);
  for (const [k, n] of Object.entries(m.DimensionExhausted || {})) out.push(`${k} exhausted on ${n} node${n === 1 ? '' : 's'}`);
  for (const [k, n] of Object.entries(m.ClassExhausted || {})) out.push(`class ${k} exhausted on ${n} node${n === 1 ? '' : 's'}`);
  for (const q of m.QuotaExhausted || []) out.push(`quota exhausted: ${q}`);
  const avail = Object.entries(m.NodesAvailable || {});
  if (avail.length) out.push(`nodes available per datacenter: ${avail.map(([dc, n]) => `${dc}=${n}`).join(', ')}`);
  if (m.CoalescedFailures) out.push(`${m.CoalescedFailures} more allocation${m.CoalescedFailures === 1 ? '' : 's'} of this group could not be placed either`);
  return out;
}

/** failuresView renders FailedTGAllocs (group -> AllocMetric). */
export function failuresView(failed, title = 'Placement failures') {
  const groups = Object.entries(failed || {});
  if (!groups.length) return null;
  return h('div', { class: 'error', id: 'placement-failures', role: 'alert' },
    h('b', null, title),
    groups.map(([g, m]) => h('div', null,
      h('strong', null, `group "${g}"`),
      h('ul', null, reasons(m).map((r) => h('li', null, r))))));
}
