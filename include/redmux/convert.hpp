// Conversions from replies to typed results (ReplyTraits specialisations).
// [placeholder: the protocol work fills this file]
#pragma once

#include "redmux/reply.hpp"
