import json,sys,collections
V={1:'base',2:'k32',3:'k64',4:'k64s',5:'k64s1',6:'k32s4',7:'base2'}
prec=sys.argv[1]; model=sys.argv[2]
data={}
for v in V:
    d=json.load(open(f'v{v}_{prec}.json'))
    for m in d['models']:
        if m['model']==model: data[v]=m
# group kernels by node (sum over kernels of node)
def bynode(m):
    r=collections.OrderedDict()
    for k in m['kernels']:
        r.setdefault(k['node'],[0,[],0])
        r[k['node']][0]+=k['gpu_ms']*1000; r[k['node']][1].append(k['kernel'].split('+')[0].replace('conv_','').replace('fused_reshape_transpose_reshape_','frtr_')); r[k['node']][2]=max(r[k['node']][2], k['flops'] or 0)
    return r
nodes={v:bynode(data[v]) for v in V}
print("node".ljust(34), *[V[v].rjust(7) for v in V], "MF")
tot=collections.Counter()
for n in nodes[1]:
    row=[nodes[v].get(n,[0])[0] for v in V]
    for v,x in zip(V,row): tot[v]+=x
    best=min(row[:6]); 
    print(n[-34:].ljust(34), *[("*" if x==best else " ")+f"{x:6.1f}" for x in row], f"{nodes[1][n][2]/1e6:6.1f}", ",".join(nodes[1][n][1]), "|", ",".join(nodes[6][n][1]) if n in nodes[6] else "")
print("total".ljust(34), *[f"{tot[v]:7.1f}" for v in V])
