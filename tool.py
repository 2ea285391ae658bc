
import sys, time
mode, secs = sys.argv[1], float(sys.argv[2])
sum(range(3_000_000))  # set-up: CPU the share must not count
print(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    "
      "t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ", flush=True)
start = time.monotonic()
if mode == "busy":
    while time.monotonic() - start < secs:
        pass
else:
    time.sleep(secs)
print(" 4       300          40.0          412.85       40.0    \t       40.0       \t12.31"
      "  \t\t98.66   \t\t412.85 ", flush=True)
time.sleep(1.0)  # perftest destroys its queue pairs and memory regions
sum(range(3_000_000))  # teardown
