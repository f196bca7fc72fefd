import json, glob, sys, collections
d = sys.argv[1]
ws = []
for f in sorted(glob.glob(d + '/gw*.jsonl')):
    rows = [json.loads(l) for l in open(f)]
    ws.append((f.split('/')[-1].split('.')[0], rows))
t0 = min(r[0][1] for _, r in ws)
tot = 0; perfile = collections.Counter(); count = collections.Counter()
ends = []
for w, rows in ws:
    tests = [r for r in rows if r[0] != '<start>']
    busy = sum(r[2] - r[1] for r in tests)
    tot += busy
    for r in tests:
        perfile[r[0].split('::')[0]] += r[2] - r[1]; count[r[0].split('::')[0]] += 1
    first = min(r[1] for r in tests) - t0
    end = max(r[2] for r in tests) - t0
    ends.append(end)
    last = sorted(tests, key=lambda r: -r[2])[:2]
    print(w, 'start %.1f' % (rows[0][1]-t0), 'first %.1f' % first, 'end %.1f' % end, 'busy %.1f' % busy, 'n=%d' % len(tests),
          [(r[0].split('::')[-1][:50], round(r[1] - t0, 1), round(r[2] - r[1], 1)) for r in last])
print('summed', round(tot, 1))
for f, s in perfile.most_common(int(sys.argv[2]) if len(sys.argv) > 2 else 25):
    print('  %6.1f %5d %s' % (s, count[f], f))
