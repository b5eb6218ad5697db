// redmux: one include for the whole public API.
//
//   #include <redmux/redmux.hpp>
//   auto mux = redmux::Multiplexer::connect("localhost:6379,name=bookstore-api");
//   long long views = mux->database().incr("bookstore:book:42:views").get();
#pragma once

#include "redmux/arg.hpp"
#include "redmux/batch.hpp"
#include "redmux/close_report.hpp"
#include "redmux/config.hpp"
#include "redmux/credentials.hpp"
#include "redmux/database.hpp"
#include "redmux/error.hpp"
#include "redmux/events.hpp"
#include "redmux/flags.hpp"
#include "redmux/future.hpp"
#include "redmux/histogram.hpp"
#include "redmux/hooks.hpp"
#include "redmux/io_pool.hpp"
#include "redmux/multiplexer.hpp"
#include "redmux/reply.hpp"
#include "redmux/resolver.hpp"
#include "redmux/result.hpp"
#include "redmux/server.hpp"
#include "redmux/server_info.hpp"
#include "redmux/subscriber.hpp"
#include "redmux/task.hpp"
#include "redmux/topology.hpp"
#include "redmux/transaction.hpp"
#include "redmux/version.hpp"
