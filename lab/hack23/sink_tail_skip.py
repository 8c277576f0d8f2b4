"""Hacker round 23, an idea weighed and not made a try (lab/hack23/README.md, "Weighed, not made"):
a kernel that skips a 32-key chunk whose best score is more than T = 20 log2 units below the
running max, on attention_sink's distribution (Q = 0.5 + N(0, 1), K row 0 = 4 in every channel,
K and V N(0, 1)). Prints the relative L2 and the bias (sum e.sign(ref) / sum |ref|) of the skip.
numpy only; seeds pinned."""
import numpy as np
def run(D, scale, N, T, rows=32, seed=0):
    rng=np.random.default_rng(seed)
    Q=0.5+rng.standard_normal((rows,D))
    K=rng.standard_normal((N,D)); K[0]=4.0
    V=rng.standard_normal((N,D))
    S=(Q@K.T)*scale*np.log2(np.e)
    m=S.max(1,keepdims=True); P=np.exp2(S-m)
    O=(P@V)/P.sum(1,keepdims=True)
    C=S[:, :N//32*32].reshape(rows,-1,32).max(2)  # chunk maxima (N multiple of 32 here)
    run_max=np.maximum.accumulate(C,axis=1)
    prev=np.concatenate([np.full((rows,1),-np.inf),run_max[:,:-1]],1)
    keep=~(C<prev-T)
    mask=np.repeat(keep,32,axis=1)
    P2=P*mask
    O2=(P2@V)/P2.sum(1,keepdims=True)
    e=O2-O
    return np.sqrt((e**2).sum()/(O**2).sum()), (e*np.sign(O)).sum()/np.abs(O).sum()
for D,scale in ((64,1/8),(128,.5/128**.5),(64,1/12),(128,1/12)):
  for N in (4096,16384,65536):
    r=run(D,scale,N,20, rows=16)
    print(D,round(scale,4),N,'rel %.2e bias %.2e'%r)
