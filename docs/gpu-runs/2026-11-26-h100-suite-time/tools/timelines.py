"""timelines.py DIR [N]: each worker's span and last tests; the tests' summed time by file and by test function
(wall, own CPU, waited children's CPU); the longest single tests."""
import json, glob, sys, collections
d = sys.argv[1]; top = int(sys.argv[2]) if len(sys.argv) > 2 else 25
ws = []
for f in sorted(glob.glob(d + '/gw*.jsonl')):
    ws.append((f.split('/')[-1].split('.')[0], [json.loads(l) for l in open(f)]))
t0 = min(r[0][1] for _, r in ws)
tot = [0, 0, 0]; perfile = collections.defaultdict(lambda: [0, 0, 0, 0]); perfn = collections.defaultdict(lambda: [0, 0, 0, 0])
tests = []
for w, rows in ws:
    mine = [r for r in rows if r[0] != '<start>']
    tests += mine
    for r in mine:
        wall, own, kids = r[2] - r[1], (r[3] if len(r) > 3 else 0), (r[4] if len(r) > 4 else 0)
        for table, key in ((perfile, r[0].split('::')[0]), (perfn, r[0].split('[')[0])):
            table[key][0] += wall; table[key][1] += own; table[key][2] += kids; table[key][3] += 1
        tot[0] += wall; tot[1] += own; tot[2] += kids
    first = min(r[1] for r in mine) - t0
    end = max(r[2] for r in mine) - t0
    last = sorted(mine, key=lambda r: -r[2])[:2]
    print(w, 'start %.1f' % (rows[0][1] - t0), 'first %.1f' % first, 'end %.1f' % end,
          'busy %.1f' % sum(r[2] - r[1] for r in mine), 'n=%d' % len(mine),
          [(r[0].split('::')[-1][:50], round(r[1] - t0, 1), round(r[2] - r[1], 1)) for r in last])
print('summed wall %.1f, own CPU %.1f, waited children CPU %.1f' % tuple(tot))
for name, table in (('file', perfile), ('test function', perfn)):
    print(f'\nby {name}:   wall   own  kids     n')
    for k, (wall, own, kids, n) in sorted(table.items(), key=lambda kv: -kv[1][0])[:top]:
        print('  %7.1f %5.1f %5.1f %5d %s' % (wall, own, kids, n, k))
print('\nlongest single tests: wall own kids start')
for r in sorted(tests, key=lambda r: r[1] - r[2])[:top]:
    print('  %5.1f %5.1f %5.1f %5.1f %s' % (r[2] - r[1], r[3] if len(r) > 3 else 0, r[4] if len(r) > 4 else 0, r[1] - t0, r[0][:120]))
