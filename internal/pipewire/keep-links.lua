-- SPDX-License-Identifier: Apache-2.0
-- Baked into the audio-operator image as
-- /usr/share/wireplumber/scripts/liken/keep-links.lua (keeplinks.go says why).
--
-- PipeWire's link factory destroys a link with the client that made it
-- unless the link was made with object.linger (src/modules/
-- module-link-factory.c), and WirePlumber's si-standard-link never sets
-- it, so every stream goes silent from the moment WirePlumber exits until
-- a new one links it again. This script does two things:
--
--  * once WirePlumber has linked a stream (after linking/link-target), it
--    replaces each of its own links of that stream with a lingering copy
--    of the same ports, marked liken.link.kept;
--  * before WirePlumber links a stream (before linking/prepare-link), it
--    adopts lingering links that already join the stream to the target it
--    chose, so a new WirePlumber does not link the same ports again (the
--    factory would answer EEXIST and WirePlumber would send the stream an
--    error), and removes kept links to any other node, as WirePlumber
--    removes its own links when it moves a stream.

lutils = require ("linking-utils")
cutils = require ("common-utils")
log = Log.open_topic ("s-linking")

local KEPT = "liken.link.kept"
-- The lingering links this WirePlumber made, by the stream node's id:
-- { link = proxy, far = the other node's id }. A link just made may not
-- be in the link object manager yet, so a move finds it here.
local kept = {}

-- The stream's node and the target's node ids, and which end of a link
-- the stream is.
local function ends (si, target)
  local node = si:get_associated_proxy ("node")
  local tnode = target:get_associated_proxy ("node")
  if node == nil or tnode == nil then
    return nil
  end
  local playback = si.properties ["item.node.direction"] == "output"
  local out_id, in_id = node ["bound-id"], tnode ["bound-id"]
  if not playback then
    out_id, in_id = in_id, out_id
  end
  return out_id, in_id, playback, node ["bound-id"]
end

-- Every link whose stream end is node id, with its far node id.
local function links_of (node_id, playback)
  local found = {}
  local own_key = playback and "link.output.node" or "link.input.node"
  local far_key = playback and "link.input.node" or "link.output.node"
  for link in cutils.get_object_manager ("link"):iterate () do
    local p = link.properties
    if tonumber (p [own_key]) == node_id then
      table.insert (found, { link = link, far = tonumber (p [far_key]), props = p })
    end
  end
  return found
end

local function lingering (props)
  return props ["client.id"] == nil
end

SimpleEventHook {
  name = "liken/adopt-kept-links",
  after = "linking/get-filter-from-target",
  before = "linking/prepare-link",
  interests = {
    EventInterest {
      Constraint { "event.type", "=", "select-target" },
    },
  },
  execute = function (event)
    local _, _, si, si_props, si_flags, target =
        lutils:unwrap_select_target_event (event)
    if not target then
      return
    end
    local out_id, in_id, playback, node_id = ends (si, target)
    if out_id == nil then
      return
    end
    local far_id = playback and in_id or out_id
    local mine = kept [node_id] or {}
    for i = #mine, 1, -1 do
      if mine [i].far ~= far_id then
        log:info (si, "... removing kept link to node " .. tostring (mine [i].far))
        mine [i].link:request_destroy ()
        table.remove (mine, i)
      end
    end
    local adopted = 0
    for _, l in ipairs (links_of (node_id, playback)) do
      if l.far == far_id then
        if lingering (l.props) then
          adopted = adopted + 1
        end
      elseif cutils.parseBool (l.props [KEPT]) then
        -- WirePlumber chose another target: the kept link goes, as
        -- WirePlumber's own link would.
        log:info (si, "... removing kept link " .. tostring (l.link ["bound-id"])
            .. " to node " .. tostring (l.far))
        l.link:request_destroy ()
      end
    end
    if adopted > 0 and si_flags.peer_id == nil then
      log:info (si, string.format ("... adopting %d kept links to node %d",
          adopted, far_id))
      si_flags.peer_id = target.id
      si_flags.was_handled = true
    end
  end
}:register ()

SimpleEventHook {
  name = "liken/keep-links",
  after = "linking/link-target",
  interests = {
    EventInterest {
      Constraint { "event.type", "=", "select-target" },
    },
  },
  execute = function (event)
    local _, _, si, _, _, target = lutils:unwrap_select_target_event (event)
    if not target then
      return
    end
    local out_id, in_id, playback, node_id = ends (si, target)
    if out_id == nil then
      return
    end
    local far_id = playback and in_id or out_id
    local own = tostring (Core.get_own_bound_id ())
    for _, l in ipairs (links_of (node_id, playback)) do
      local p = l.props
      if l.far == far_id and p ["client.id"] == own then
        local props = {
          ["link.output.node"] = p ["link.output.node"],
          ["link.output.port"] = p ["link.output.port"],
          ["link.input.node"] = p ["link.input.node"],
          ["link.input.port"] = p ["link.input.port"],
          ["object.linger"] = true,
          [KEPT] = true,
        }
        local key = p ["link.output.port"] .. ">" .. p ["link.input.port"]
        log:info (si, "... keeping link " .. key .. " after WirePlumber")
        -- Destroy first: the factory refuses a second link between the
        -- same ports. Both messages leave on this connection in this
        -- order, and PipeWire handles them in one pass of its loop.
        l.link:request_destroy ()
        local k = Link ("link-factory", props)
        kept [node_id] = kept [node_id] or {}
        table.insert (kept [node_id], { link = k, far = far_id })
        k:activate (Feature.Proxy.BOUND, function (_, e)
          if e then
            log:warning (si, "could not keep link " .. key .. ": " .. tostring (e))
          else
            log:info (si, "... kept link " .. key)
          end
        end)
      end
    end
  end
}:register ()

SimpleEventHook {
  name = "liken/forget-kept-links",
  interests = {
    EventInterest {
      Constraint { "event.type", "=", "node-removed" },
    },
  },
  execute = function (event)
    kept [event:get_subject () ["bound-id"]] = nil
  end
}:register ()
