import json,glob,sys,collections
d=sys.argv[1]
ws=[]
for f in sorted(glob.glob(d+'/*.jsonl')):
    rows=[json.loads(l) for l in open(f)]
    if f.split('/')[-1].startswith('main'): continue
    ws.append((f.split('/')[-1].split('-')[0],rows))
t0=min(r[0][1] for _,r in ws)
tot=0; perfile=collections.Counter()
for w,rows in ws:
    tests=[r for r in rows if r[0]!='<start>']
    tot+=sum(r[2]-r[1] for r in tests)
    for r in tests: perfile[r[0].split('::')[0]]+=r[2]-r[1]
    last=sorted(tests,key=lambda r:-r[2])[:3]
    srch=[r for r in tests if 'smallest_shape' in r[0]]
    print(w, 'end %.1f'%(tests[-1][2]-t0), 'n=%d'%len(tests), 'search n=%d sum=%.1f'%(len(srch),sum(r[2]-r[1] for r in srch)), [(r[0].split('::')[-1][:60], round(r[1]-t0,1), round(r[2]-r[1],1)) for r in last[:2]])
print('summed', round(tot,1))
for f,s in perfile.most_common(12): print('  %6.1f %s'%(s,f))
