#!/usr/bin/env python3
# Compares the before and after sides of docs/lab/layers/run.sh: the main
# job's throughput ratio (after / before) per lock and overcommit, one value
# per invocation, and the Go shapes' median ns/op ratio per invocation
# (pass any argument to list every benchmark).
import json,glob,re,statistics,collections,sys
import os
d=os.path.dirname(os.path.abspath(__file__))
# main job: after/before ratio per lock x overcommit per invocation
invs=sorted({re.search(r'-(\d+)-rows',f).group(1) for f in glob.glob(d+'/mainjob-after-*-rows.json')})
cells=collections.defaultdict(list)
for i in invs:
    try:
        b={(r['lock'],r['overcommit']):r['ops_per_sec'] for r in json.load(open(f'{d}/mainjob-before-{i}-rows.json'))}
        a={(r['lock'],r['overcommit']):r['ops_per_sec'] for r in json.load(open(f'{d}/mainjob-after-{i}-rows.json'))}
    except FileNotFoundError: continue
    for k in a:
        if k in b: cells[k].append((b[k],a[k]))
locks=sorted({k[0] for k in cells})
ocs=sorted({k[1] for k in cells})
print('main job, ops/s before -> after (ratio), per invocation')
print('| lock | '+' | '.join(f'{o:g}x' for o in ocs)+' |')
print('|---|'+'---|'*len(ocs))
for l in locks:
    row=[]
    for o in ocs:
        v=cells.get((l,o),[])
        row.append(', '.join(f'{a/b:.2f}' for b,a in v))
    print(f'| {l} | '+' | '.join(row)+' |')
allr=[a/b for v in cells.values() for b,a in v]
print('all cells: median %.3f, min %.2f, max %.2f, n=%d'%(statistics.median(allr),min(allr),max(allr),len(allr)))
# go shapes
def load(f):
    m=collections.defaultdict(list)
    for line in open(f):
        if 'ns/op' in line:
            p=line.split(); m[p[0]].append(float(p[2]))
    return m
print()
print('GoShapes -cpu 2, median ns/op before -> after')
for i in invs:
    try: b=load(f'{d}/goshapes-before-{i}.txt'); a=load(f'{d}/goshapes-after-{i}.txt')
    except FileNotFoundError: continue
    rs=[]
    for k in sorted(a):
        if k in b:
            rb,ra=statistics.median(b[k]),statistics.median(a[k]); rs.append(ra/rb)
            if len(sys.argv)>1: print(f'{i} {k} {rb:.2f} {ra:.2f} {ra/rb:.2f}')
    print(f'inv {i}: {len(rs)} benchmarks, after/before median {statistics.median(rs):.3f}, min {min(rs):.2f}, max {max(rs):.2f}')
