import json,sys,collections
prec=sys.argv[1]; model=sys.argv[2]
def load(f):
    d=json.load(open(f))
    for m in d['models']:
        if m['model']==model: return m
def bynode(m):
    r=collections.OrderedDict()
    for k in m['kernels']:
        r.setdefault(k['node'],[0,[],0])
        r[k['node']][0]+=k['gpu_ms']*1000; r[k['node']][1].append(k['kernel'].split('+')[0]); r[k['node']][2]=max(r[k['node']][2], k['flops'] or 0)
    return r
o=[bynode(load(f'r{r}_{prec}_old.json')) for r in (1,2)]
n=[bynode(load(f'r{r}_{prec}_new.json')) for r in (1,2)]
tot=[0,0]
for k in o[0]:
    a=(o[0][k][0]+o[1][k][0])/2; b=(n[0][k][0]+n[1][k][0])/2 if k in n[0] else 0
    tot[0]+=a; tot[1]+=b
    if o[0][k][1]!=n[0].get(k,[0,[]])[1] or abs(a-b)>1:
        print(f"{a:6.1f} {b:6.1f} {b-a:+5.1f} {o[0][k][2]/1e6:6.1f}MF {','.join(o[0][k][1])[:40]:40s} {','.join(n[0][k][1])[:40]:40s} {k[-30:]}")
print(tot)
