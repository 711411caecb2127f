-- wrk script of `make bench` (bench/cmd/ddsbench): replays requests read
-- from a file, one per line as METHOD<TAB>PATH<TAB>BODY, in random order.
-- Arguments after `--`: the request file, then headers as "Name: value".
-- A body holding {{uuid}} gets a fresh random UUID there on every request.
-- done() prints one machine-readable line the bench parses.

local reqs = {}

function init(args)
  for i = 2, #args do
    local name, value = args[i]:match("^([^:]+):%s*(.*)$")
    if name then wrk.headers[name] = value end
  end
  for line in io.lines(args[1]) do
    local method, path, body = line:match("^(%u+)\t([^\t]*)\t(.*)$")
    if method then
      if body == "" then body = nil end
      if body and body:find("{{uuid}}", 1, true) then
        reqs[#reqs + 1] = {method, path, body}
      else
        reqs[#reqs + 1] = wrk.format(method, path, nil, body)
      end
    end
  end
  if #reqs == 0 then error("no requests in " .. args[1]) end
  math.randomseed(os.time() + (tonumber(tostring({}):match("0x(%x+)") or "0", 16) % 1000003))
end

local function uuid()
  return (string.gsub("xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx", "[xy]", function(c)
    local v = (c == "x") and math.random(0, 15) or math.random(8, 11)
    return string.format("%x", v)
  end))
end

function request()
  local r = reqs[math.random(#reqs)]
  if type(r) == "table" then
    return wrk.format(r[1], r[2], nil, (string.gsub(r[3], "{{uuid}}", uuid())))
  end
  return r
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("DDSBENCH requests=%d duration_us=%d status_errors=%d socket_errors=%d p50_us=%d p99_us=%d\n",
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
