# Trims a real telemetry.json (from `rig run scenarios/demo.yaml`) to a
# 10-interval window and shifts its times so that interval `center` of the
# window holds t0 + k·10 s + 100 ms, where the synthetic rounds of
# gen_test.go put request seq 100. Usage: python3 trim.py IN OUT FIRST CENTER K
import json, sys
src, dst, first, center, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
t0 = 1_767_225_600_000_000_000
d = json.load(open(src))
ivs = d['intervals'][first:first + 10]
c = ivs[center]
shift = t0 + k * 10_000_000_000 + 100_000_000 - (c['start_ns'] + c['end_ns']) // 2
secs = (ivs[-1]['end_ns'] - ivs[0]['start_ns']) / 1e9
keep = [j for j in range(len(d['sources'])) if sum(iv['d'][j] for iv in ivs) > 0]
sources = []
for j in keep:
    s = dict(d['sources'][j]); s['total'] = sum(iv['d'][j] for iv in ivs); s['per_sec'] = s['total'] / secs
    sources.append(s)
used = sorted({t for iv in ivs for t in iv.get('threads', [])})
remap = {old: new for new, old in enumerate(used)}
out_ivs = []
for iv in ivs:
    o = {'start_ns': iv['start_ns'] + shift, 'end_ns': iv['end_ns'] + shift, 'd': [iv['d'][j] for j in keep]}
    for f in ('vol', 'invol'):
        if f in iv: o[f] = iv[f]
    if iv.get('threads'): o['threads'] = [remap[t] for t in iv['threads']]
    out_ivs.append(o)
d.update(start_ns=out_ivs[0]['start_ns'], end_ns=out_ivs[-1]['end_ns'], samples=len(out_ivs) + 1,
         sources=sources, intervals=out_ivs, threads_seen=[d['threads_seen'][t] for t in used])
json.dump(d, open(dst, 'w'), indent=1)
