import re,sys,statistics as st, collections
rows=collections.defaultdict(list); cur=None
for line in open(sys.argv[1]):
    if line.startswith('== '):
        cur=line[3:].strip(); continue
    m=re.search(r'([0-9.e+]+) items/s',line)
    if m and cur:
        w=re.sub(r' --mode \w+| --repeat \d+| -t \d+| -v \w+','',cur)
        mode=re.search(r'--mode (\w+)',cur).group(1); t=re.search(r'-t (\d+( -v \w+)?)',cur)
        rows[w].append((mode+(':'+t.group(1) if t else ''),float(m.group(1))))
for w,l in rows.items():
    # split into rounds at each 'gpu'
    rs=[];r=None
    for k,v in l:
        if k=='gpu': r={};rs.append(r)
        if r is not None: r[k]=v
    keys=[k for k in rs[0] if k.startswith('steal')]
    print(w, 'gpu',' '.join('%.3g'%r['gpu'] for r in rs),'cpu',' '.join('%.3g'%r['cpu'] for r in rs))
    for k in keys:
        es=[r[k]/(r['cpu']+r['gpu']) for r in rs if k in r]
        gs=[r[k]/r['gpu'] for r in rs if k in r]
        print('  %-9s E %s  median %.3f  | steal/gpu median %.3f'%(k,' '.join('%.3f'%e for e in es),st.median(es),st.median(gs)))
