-- wrk script: GET /api/v1/lookup for addresses read from ADDRS (one per
-- line), cycled in order; each wrk thread starts at a different offset.
local addrs = {}
local i = 0
function init(args)
  local path = os.getenv("ADDRS")
  for line in io.lines(path) do addrs[#addrs + 1] = line end
  i = math.random(#addrs)
end
function request()
  i = i % #addrs + 1
  return wrk.format("GET", "/api/v1/lookup?ip=" .. addrs[i])
end
