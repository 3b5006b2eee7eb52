-- The `wrk` table every script sees, with wrk's documented defaults and the two
-- functions written in Lua: wrk.format builds a request from the table's values,
-- wrk.init runs the script's init(args) and fixes the request a script without
-- request() sends. The fields naming the target, wrk.lookup, wrk.connect and
-- wrk.thread are filled in from Rust.
local wrk = {
   scheme  = "http",
   host    = "localhost",
   port    = nil,
   method  = "GET",
   path    = "/",
   headers = {},
   body    = nil,
   thread  = nil,
}

function wrk.format(method, path, headers, body)
   method  = method  or wrk.method
   path    = path    or wrk.path
   headers = headers or wrk.headers
   body    = body    or wrk.body

   if not headers["Host"] then
      headers["Host"] = wrk.headers["Host"]
   end
   -- As wrk: the length of the body, or no Content-Length without one.
   headers["Content-Length"] = body and string.len(body)

   local lines = { string.format("%s %s HTTP/1.1", method, path) }
   for name, value in pairs(headers) do
      lines[#lines + 1] = string.format("%s: %s", name, value)
   end
   lines[#lines + 1] = ""
   lines[#lines + 1] = body or ""
   return table.concat(lines, "\r\n")
end

function wrk.init(args)
   if not wrk.headers["Host"] then
      local host = wrk.host
      if host:find(":") then
         host = "[" .. host .. "]"
      end
      if wrk.port then
         host = host .. ":" .. wrk.port
      end
      wrk.headers["Host"] = host
   end
   if type(init) == "function" then
      init(args)
   end
   local req = wrk.format()
   wrk.request = function()
      return req
   end
end

return wrk
