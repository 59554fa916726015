"""Integer tags shared by the engine's modules (no per-event strings on the hot path).

- ``E_*``: events the engine sends to the scheduler, kept as tuples ``(kind, timestamp, ...)``
  until a driver turns them into Batsim JSON (:mod:`batfeed.engine.messages`) or callbacks
  (:mod:`batfeed.engine.direct`);
- ``T_*``: timers, i.e. the SimGrid sleeps of Batsim's actors (submitters, job executors, waiters,
  the request-reply actor), ordered by (date, creation sequence);
- ``M_*``: messages sent to Batsim's server actor, processed in mailbox order.
"""

# events to the scheduler: (kind, timestamp, ...)
E_BEGINS = 0        # (E_BEGINS, t)
E_ENDS = 1          # (E_ENDS, t)
E_SUBMITTED = 2     # (E_SUBMITTED, t, job)
E_COMPLETED = 3     # (E_COMPLETED, t, job)
E_KILLED = 4        # (E_KILLED, t, [job ids], {job id: progress dict})
E_CALL = 5          # (E_CALL, t)                          REQUESTED_CALL
E_NOTIFY = 6        # (E_NOTIFY, t, "no_more_static_job_to_submit" | "no_more_external_event_to_occur")
E_MACHINES = 7      # (E_MACHINES, t, "event_machine_(un)available", intervals)
E_GENERIC = 8       # (E_GENERIC, t, event JSON object)

# timers: heap entries (date, seq, kind, payload)
T_SUB = 0           # a job or event submitter wakes up (payload: the submitter)
T_END = 1           # a job's executor wakes up (payload: (job, final state))
T_CALL = 2          # a CALL_ME_LATER waiter wakes up
T_RR = 3            # the request-reply actor wakes up (a decision stamped later, or the reply's now)
T_ENDED = 4         # an executor that already ran (machines freed) and now posts its JOB_COMPLETED
T_RAN = 5           # an executor that already ran and goes on (a composed job's next step): posts nothing
T_STEP = 6          # a composed job's executor ends a wait (payload: (job, executor, serial, how))

# messages to the server: (kind, a, b)
M_HELLO = 0         # submitter a says hello
M_BATCH = 1         # submitter a submits the jobs (or events) b
M_BYE = 2           # submitter a has nothing left
M_DONE = 3          # job a completed
M_WAITED = 4        # a waiter's date was reached
M_KILLED = 5        # a killer is done: a = (jobs asked, progress, jobs really killed)
M_DECISION = 6      # the request-reply actor forwards decision a = (timestamp, handler, args)
M_READY = 7         # the request-reply actor is done: the scheduler is ready again

# energy (-E, batfeed/engine/energy_sim.py); numbered apart from the above
E_STATE_CHANGED = 16  # (E_STATE_CHANGED, t, intervals, "pstate")   RESOURCE_STATE_CHANGED
E_ANSWER = 17         # (E_ANSWER, t, consumed joules)               ANSWER {consumed_energy}
T_SWITCH = 16         # a machine's switch on/off (its one flop on the virtual pstate) ends
M_SWITCHED = 16       # a switched machine tells the server (SWITCHED_ON / SWITCHED_OFF), from its own host
