-- done() prints latency percentiles and the summary as CSV.
done = function(summary, latency, requests)
   io.write("------------------------------\n")
   for _, p in pairs({ 50, 90, 99, 99.999 }) do
      n = latency:percentile(p)
      io.write(string.format("%g%%,%d\n", p, n))
   end
   io.write(string.format("requests,%d,errors,%d,duration,%d\n", summary.requests,
      summary.errors.connect + summary.errors.read + summary.errors.write +
      summary.errors.status + summary.errors.timeout, summary.duration))
   io.write(string.format("min,%d,max,%d,rate samples,%d\n", latency.min, latency.max, #requests))
end
