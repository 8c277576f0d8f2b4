// Whether a well-formed worker event is about the job the parent sent. The worker runs
// candidate code, so an event that decodes is still not believed until it names a case or a
// benchmark of the job and, with an output, the very file the job gave it: anything else is a
// protocol break, and the caller ends the worker with a crash verdict (WorkerClient::reject).
#pragma once
#include <optional>
#include <string>

#include "gpu/worker_events.h"
#include "gpu/worker_protocol.h"

namespace evo {

// The reason `ev` does not belong to `job`, or nullopt when it does (or names nothing to check).
std::optional<std::string> foreign_event(const WorkerJob& job, const WorkerEvent& ev);

}  // namespace evo
