# Decode-heavy serving of the running example's layer (K = N = 4096): most calls are single-token
# decode steps (M = 1), a few batch sizes dominate the rest, prefill is rare.
M=1 K=4096 N=4096 calls=20000
M=2 K=4096 N=4096 calls=2000
M=4 K=4096 N=4096 calls=3000
M=8 K=4096 N=4096 calls=1500
M=16 K=4096 N=4096 calls=800
M=64 K=4096 N=4096 calls=100
M=256 K=4096 N=4096 calls=20
