# Generates the graphs of docs/results/compile_time_intel.txt: python3 bench/compile_time_graphs.py {chain|fan|nest|square} N
#   chain N: N steps of %v = %v * 0.5 + %x (2N ops, one dependence chain)
#   fan N:   N/10 independent chains of 10 ops from one input (N/10 groups: the per-group cost)
#   distinct N: as fan, but no two chains apply the same ops (chain c's step i: one of + - * max min
#            by c's base-5 digit i): every group is other code, the worst case for kernel reuse
#   distinct_rows N: as distinct, each chain ending in a row sum (reduce_sum over the last axis):
#            every group a reduction of other code, which elementwise programs do not cover
#   nest N:  a balanced tree of adds over N/2 scaled copies of the input (N ops)
#   square N: %v = %v * %v chained (a value read twice per op)
import sys
def chain(n):
    L=["graph chain {","  %x = input : f32[M, 64]","  %v0 = %x + 1.0"]
    for i in range(1,n): L.append(f"  %v{i} = %v{i-1} * 0.5 + %x")
    L.append(f"  output %v{n-1}"); return L
def fan(n, depth=10):
    chains=max(1,n//depth)
    L=["graph fan {","  %x = input : f32[M, 64]"]
    for c in range(chains):
        L.append(f"  %c{c}_0 = %x + {c}.0")
        for i in range(1,depth): L.append(f"  %c{c}_{i} = %c{c}_{i-1} * %x")
    L.append("  output " + ", ".join(f"%c{c}_{depth-1}" for c in range(chains))); return L
def distinct(n, depth=10):
    chains=max(1,n//depth)
    steps=["{} + %x","{} - %x","{} * %x","max({}, %x)","min({}, %x)"]
    L=["graph distinct {","  %x = input : f32[M, 64]"]
    for c in range(chains):
        L.append(f"  %c{c}_0 = %x * {c + 2}.0")  # its own first value: no prefix shared through CSE
        for i in range(1,depth):
            L.append(f"  %c{c}_{i} = " + steps[(c // 5**(i-1)) % 5].format(f"%c{c}_{i-1}"))
    L.append("  output " + ", ".join(f"%c{c}_{depth-1}" for c in range(chains))); return L
def distinct_rows(n, depth=10):
    chains=max(1,n//depth)
    L=distinct(chains*(depth-1), depth-1)[:-1]
    L[0]="graph distinct_rows {"
    for c in range(chains): L.append(f"  %r{c} = reduce_sum(%c{c}_{depth-2}, axes=[1])")
    L.append("  output " + ", ".join(f"%r{c}" for c in range(chains))); return L
def nest(n):
    # a balanced tree of adds over n leaves computed from x: deep nesting of reused values
    L=["graph nest {","  %x = input : f32[M, 64]"]
    level=[f"%l0_{i}" for i in range(n//2)]
    for i,v in enumerate(level): L.append(f"  {v} = %x * {i}.0")
    d=1
    while len(level)>1:
        nxt=[]
        for i in range(0,len(level)-1,2):
            v=f"%l{d}_{i//2}"; L.append(f"  {v} = {level[i]} + {level[i+1]}"); nxt.append(v)
        if len(level)%2: nxt.append(level[-1])
        level=nxt; d+=1
    L.append(f"  output {level[0]}"); return L
def square(n):
    L=["graph square {","  %x = input : f32[M, 64]","  %v0 = %x + 1.0"]
    for i in range(1,n): L.append(f"  %v{i} = %v{i-1} * %v{i-1}")
    L.append(f"  output %v{n-1}"); return L
kind,n=sys.argv[1],int(sys.argv[2])
print("\n".join({"chain":chain,"fan":fan,"distinct":distinct,"distinct_rows":distinct_rows,"nest":nest,"square":square}[kind](n))+"\n}")
