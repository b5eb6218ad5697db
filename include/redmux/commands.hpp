// Commands<Self>: every typed command group in one mixin, for a sink (Database, Batch,
// Transaction …) that provides `template <class T> Future<T> send(const CallOptions&,
// std::span<const Arg>)` — see commands/sink.hpp for the contract. Each group is also a
// header of its own (commands/strings.hpp …) for a sink that wants only some; adding a
// group means one header and one line here, never a copy per sink.
//
// Ownership and threads: the mixins hold no state; every method builds its arguments on
// the calling thread and is exactly as thread-safe as the sink's send().
#pragma once

#include "redmux/commands/bitmaps.hpp"
#include "redmux/commands/geo.hpp"
#include "redmux/commands/hashes.hpp"
#include "redmux/commands/hyperloglog.hpp"
#include "redmux/commands/keys.hpp"
#include "redmux/commands/lists.hpp"
#include "redmux/commands/pubsub.hpp"
#include "redmux/commands/scripting.hpp"
#include "redmux/commands/server.hpp"
#include "redmux/commands/sets.hpp"
#include "redmux/commands/sorted_sets.hpp"
#include "redmux/commands/streams.hpp"
#include "redmux/commands/strings.hpp"
#include "redmux/types.hpp"

namespace redmux {

template <class Derived>
class Commands : public StringCommands<Derived>,
                 public KeyCommands<Derived>,
                 public HashCommands<Derived>,
                 public ListCommands<Derived>,
                 public SetCommands<Derived>,
                 public SortedSetCommands<Derived>,
                 public HyperLogLogCommands<Derived>,
                 public StreamCommands<Derived>,
                 public GeoCommands<Derived>,
                 public BitmapCommands<Derived>,
                 public ScriptingCommands<Derived>,
                 public ServerCommands<Derived>,
                 public PubSubCommands<Derived> {};

}  // namespace redmux
