// pages/failures.js: renders the scheduler's placement-failure metrics (AllocMetric) as reasons.
import { h, link, enc } from '../dom.js';

/**
 * reasons turns one AllocMetric into human-readable lines (not its
 * ClassFiltered/ClassExhausted: computed-class hashes mean nothing to a reader).
 */
export function reasons(m) {
  const out = [];
  if (!m) return out;
  const evaluated = `${m.NodesEvaluated || 0} of ${m.NodesInPool ?? '?'} nodes evaluated`;
  out.push(`${evaluated}; ${m.NodesFiltered || 0} filtered, ${m.NodesExhausted || 0} exhausted`);
  for (const [k, n] of Object.entries(m.ConstraintFiltered || {})) out.push(`constraint ${k} filtered ${n} node${n === 1 ? '' : 's'}`);
  for (const [k, n] of Object.entries(m.DimensionExhausted || {})) out.push(`${k} exhausted on ${n} node${n === 1 ? '' : 's'}`);
  for (const q of m.QuotaExhausted || []) out.push(`quota exhausted: ${q}`);
  const avail = Object.entries(m.NodesAvailable || {});
  if (avail.length) out.push(`nodes available per datacenter: ${avail.map(([dc, n]) => `${dc}=${n}`).join(', ')}`);
  if (m.CoalescedFailures) out.push(`${m.CoalescedFailures} more allocation${m.CoalescedFailures === 1 ? '' : 's'} of this group could not be placed either`);
  return out;
}

/**
 * whyView renders the scheduler's structured why-pending reasons
 * (m.Reasons: {Kind, Message, Node, Queue, ...}) and counterfactuals
 * (m.Counterfactuals: {Kind, Message, JobID, Priority, Node, Blocked}), or
 * null for a metric without them (an older server).
 */
function whyView(m) {
  const rs = m?.Reasons || [];
  const cs = m?.Counterfactuals || [];
  if (!rs.length && !cs.length) return null;
  return h('div', { class: 'why' },
    rs.length ? h('ul', { class: 'why-reasons' }, rs.map((r) => h('li', { dataset: { kind: r.Kind } }, r.Message))) : null,
    cs.length ? h('div', { class: 'would-run' }, h('span', { class: 'muted' }, 'Would run: '),
      h('ul', null, cs.map((c, i) => h('li', { dataset: { kind: c.Kind } },
        i ? 'or ' : '', c.Message.replace(/^would run /, ''),
        c.JobID ? [' ', link(`/ui/jobs/${enc(c.JobID)}${c.Namespace && c.Namespace !== 'default' ? `?namespace=${enc(c.Namespace)}` : ''}`, `(job ${c.JobID})`)] : null)))) : null);
}

/** failuresView renders FailedTGAllocs (group -> AllocMetric). */
export function failuresView(failed, title = 'Placement failures') {
  const groups = Object.entries(failed || {});
  if (!groups.length) return null;
  return h('div', { class: 'error', id: 'placement-failures', role: 'alert' },
    h('b', null, title),
    groups.map(([g, m]) => {
      const why = whyView(m);
      const counts = h('ul', { class: 'counters' }, reasons(m).map((r) => h('li', null, r)));
      return h('div', { dataset: { group: g } },
        h('strong', null, `group "${g}"`),
        why,
        why ? h('details', null, h('summary', null, 'Placement counters'), counts) : counts);
    }));
}
