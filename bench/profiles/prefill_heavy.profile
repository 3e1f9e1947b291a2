# Prefill-heavy use of the running example's layer (K = 1024, N = 4096): long prompts dominate,
# a few decode steps.
M=1 K=1024 N=4096 calls=200
M=16 K=1024 N=4096 calls=100
M=128 K=1024 N=4096 calls=300
M=512 K=1024 N=4096 calls=600
M=2048 K=1024 N=4096 calls=100
