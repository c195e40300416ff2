-- wrk script for bench_settlements.py: send every settlement in a list exactly once.
--
-- Run with one wrk thread (-t1), so one Lua state walks the list:
--   wrk -t1 -c32 -d600s -s bench/settlements.lua URL -- SETTLEMENTS_FILE ANSWERS_FILE TOKEN
-- SETTLEMENTS_FILE: one "reference user_id amount" per line. Each answer is written to ANSWERS_FILE
-- as "status body" on one line; the Python side checks that every reference was answered
-- 200 exactly once. The last answer ends the run (see response()). Connections that
-- ask for work once the list is empty get GET /v1/settlements (with the token, which every
-- path needs), a 405 that touches neither the service code nor the database, and whose
-- answers are not written.

local settlements = {}
local next_index = 1
local answered = 0
local verified = false
local answers, answers_path
local headers

function init(args)
  for line in io.lines(args[1]) do
    local reference, user_id, amount = line:match("^(%S+) (%S+) (%d+)$")
    settlements[#settlements + 1] = '{"reference":"' .. reference .. '","user_id":"'
      .. user_id .. '","amount":' .. amount .. '}'
  end
  answers_path = args[2]
  answers = assert(io.open(answers_path, "w"))
  headers = {
    ["Authorization"] = "Bearer " .. args[3],
    ["Content-Type"] = "application/json",
  }
end

function request()
  if not verified then
    -- wrk calls request() once before any connection exists, to count pipelined requests,
    -- and sends nothing from that call: hand it the first settlement without consuming it
    verified = true
    return wrk.format("POST", "/v1/settlements", headers, settlements[1])
  end
  local body = settlements[next_index]
  if body == nil then
    return wrk.format("GET", "/v1/settlements", headers)
  end
  next_index = next_index + 1
  return wrk.format("POST", "/v1/settlements", headers, body)
end

function response(status, response_headers, body)
  if status == 405 then
    return
  end
  answers:write(status, " ", body, "\n")
  answered = answered + 1
  if answered == #settlements then
    answers:close()
    -- wrk's main thread sleeps for -d whatever the threads do: the caller sees this file
    -- and interrupts it (SIGINT), which makes wrk print its summary and exit
    assert(io.open(answers_path .. ".done", "w")):close()
    wrk.thread:stop()
  end
end
