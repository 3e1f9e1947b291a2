# Calls per shape of the layer in a decode-heavy run (recorded with TESSEL_LIB_PROFILE=FILE, or
# written by hand): the build keeps the guarded variants that pay for themselves on it.
M=1 K=17 calls=20000
M=3 K=17 calls=2000
M=64 K=17 calls=50
