# Sixteen batch sizes of a two-layer MLP (algorithms/mlp2.tsl: K = N = 1024, hidden H = 4096) in a
# mixed serving run: mostly small decode batches, a tail of prefill chunks. The shape set
# bench/fleet_tuning_real.py --graph algorithms/mlp2.tsl --lib-profile measures through the job queue.
M=1 K=1024 H=4096 N=1024 calls=20000
M=2 K=1024 H=4096 N=1024 calls=4000
M=3 K=1024 H=4096 N=1024 calls=3000
M=4 K=1024 H=4096 N=1024 calls=3000
M=5 K=1024 H=4096 N=1024 calls=1500
M=6 K=1024 H=4096 N=1024 calls=1500
M=8 K=1024 H=4096 N=1024 calls=2000
M=12 K=1024 H=4096 N=1024 calls=800
M=16 K=1024 H=4096 N=1024 calls=800
M=24 K=1024 H=4096 N=1024 calls=400
M=32 K=1024 H=4096 N=1024 calls=400
M=48 K=1024 H=4096 N=1024 calls=200
M=64 K=1024 H=4096 N=1024 calls=200
M=96 K=1024 H=4096 N=1024 calls=100
M=128 K=1024 H=4096 N=1024 calls=100
M=256 K=1024 H=4096 N=1024 calls=50
