"""Hand-written subjects, values and sentence templates of the knowledge-update set (read by
``bench/knowledge_update/generate.py``).

Placeholders: ``{s}`` the subject as it reads inside a sentence ("the billing service"), ``{S}``
the same capitalised, ``{n}`` its bare name ("billing service"), ``{v}`` a value, ``{old}`` and
``{new}`` the value before and after a correction; ``{slug}`` inside a value is the subject's
slug ("billing-service"). A negation attribute has no values: its fact templates mark the
statement in ``[...]`` (the old value) and its correction templates mark the negated statement
(the new value).
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = ("project", "service", "person", "team")


@dataclass(frozen=True)
class Attribute:
    """One thing a memory can say about a subject. ``fixes``, ``dups`` and ``asks`` are empty for
    an attribute that only fills the bank (a filler)."""

    key: str
    field: str  # date | number | name | negation | other
    values: tuple[str, ...]
    facts: tuple[str, ...]
    fixes: tuple[str, ...] = ()
    dups: tuple[str, ...] = ()
    asks: tuple[str, ...] = ()


# Subjects of the bank, bare names; a service and a team read with "the" inside a sentence.
SUBJECTS: dict[str, tuple[str, ...]] = {
    "project": ("Heron", "Osprey", "Kestrel", "Falcon", "Plover", "Curlew", "Avocet", "Bittern", "Egret",
                "Merlin", "Puffin", "Dunlin", "Gannet", "Lapwing", "Shrike", "Wren", "Siskin", "Ibis",
                "Dotterel", "Petrel", "Godwit", "Grebe", "Linnet", "Redstart", "Fulmar", "Bunting", "Oriole",
                "Condor", "Whimbrel", "Stonechat"),
    "service": ("billing service", "auth service", "search API", "notifications service", "ingest pipeline",
                "reporting service", "payments gateway", "export worker", "audit log service", "media service",
                "scheduler", "config service", "invoicing service", "geocoding service", "thumbnail service",
                "webhook relay", "session store", "email sender"),
    "person": ("Priya Nair", "Tomasz Kowal", "Amara Okafor", "Lena Fischer", "Diego Morales", "Hana Sato",
               "Jonas Berg", "Fatima Rahman", "Mateo Rossi", "Chloe Martin", "Ravi Menon", "Ingrid Holm",
               "Kwame Mensah", "Yuki Tanaka", "Sofia Lindqvist", "Omar Haddad", "Grace Liu", "Pedro Alves",
               "Anya Volkova", "Daniel Cohen", "Mei Chen", "Lucas Dubois", "Zainab Yusuf", "Erik Nilsson",
               "Isabel Ortega", "Kofi Boateng", "Sara Ahmed", "Noah Williams"),
    "team": ("platform team", "data team", "mobile team", "design team", "support team", "security team",
             "growth team", "infra team", "payments team", "search team", "web team", "QA team"),
}

# Subjects that appear nowhere in the bank: the no-answer questions ask about them.
ABSENT_SUBJECTS: dict[str, tuple[str, ...]] = {
    "project": ("Albatross", "Cormorant", "Nightjar", "Sandpiper", "Skylark", "Warbler", "Starling", "Pelican"),
    "service": ("translation service", "fraud scoring service", "PDF renderer", "SMS dispatcher", "image resizer",
                "ledger service"),
    "person": ("Nadia Petrov", "Samuel Adeyemi", "Clara Jensen", "Hiro Watanabe", "Elena Costa", "Tariq Aziz",
               "Maya Goldberg"),
    "team": ("compliance team", "partnerships team", "finance team", "legal team", "research team"),
}

# People named as values (leads, managers, on-call engineers): never a subject.
PEOPLE = ("Marta Silva", "Ben Okoro", "Julia Weiss", "Arjun Rao", "Nora Quinn", "Felix Braun", "Aisha Bello",
          "Leo Novak", "Rosa Jimenez", "Victor Lam")

PROJECT = (
    Attribute(
        "launch", "date",
        ("March 3", "April 14", "May 12", "June 15", "July 20", "August 6", "September 9", "October 28"),
        ("{S}'s public launch is set for {v}.", "We plan to launch {s} on {v}.", "{S} goes live for customers on {v}."),
        ("{S}'s launch moved from {old} to {new}.", "{S} now launches on {new}, not {old}.",
         "The {n} launch date slipped to {new}.", "{S} will go live on {new} instead of {old}.",
         "Heads up: the {n} launch is now {new}."),
        ("Customers get access to {s} starting {v}.", "The go-live for {s} is pencilled in for {v}."),
        ("When does {s} launch?", "What is the launch date for {s}?"),
    ),
    Attribute(
        "lead", "name", PEOPLE,
        ("{v} leads the {n} project.", "{S} is run by {v}.", "The tech lead on {s} is {v}."),
        ("{new} has taken over {s} from {old}.", "{S} is now led by {new}.", "{old} handed {s} over to {new}.",
         "{old} no longer leads {s}; {new} does.", "Leadership of {s} switched from {old} to {new}."),
        ("Questions about {s} go to {v}, who owns it.", "If {s} needs a decision, {v} makes the call."),
        ("Who leads {s}?", "Who is the lead on {s}?"),
    ),
    Attribute(
        "database", "name",
        ("PostgreSQL 16", "MySQL 8", "DynamoDB", "MongoDB", "CockroachDB", "SQLite", "Aurora Postgres", "Cassandra"),
        ("{S} stores its data in {v}.", "{S} runs on a {v} database.", "The backing store for {s} is {v}."),
        ("{S} migrated from {old} to {new}.", "{S} now keeps its data in {new}.",
         "We moved {s} off {old} and onto {new}.", "{S} uses {new} instead of {old} now."),
        ("All of {s}'s records live in {v}.", "We picked {v} to hold everything {s} persists."),
        ("Which database does {s} use?", "Where does {s} keep its data?"),
    ),
    Attribute(
        "region", "other", ("us-east-1", "eu-west-1", "eu-central-1", "ap-southeast-2", "us-west-2", "ca-central-1"),
        ("{S} is deployed in {v}.", "{S}'s production stack lives in the {v} region.", "We host {s} out of {v}."),
        ("{S} was moved from {old} to {new}.", "{S} now runs in {new}.",
         "Production for {s} is in {new} these days, no longer {old}.", "{S}'s region changed to {new}."),
        ("The servers behind {s} sit in AWS {v}.", "Every production request for {s} is served from {v}."),
        ("Which AWS region hosts {s}?", "Where is {s} deployed?"),
    ),
    Attribute(
        "version", "number", ("2.4", "3.0", "3.1", "4.2", "1.9", "5.0", "2.7"),
        ("The current release of {s} is version {v}.", "{S} is on version {v} in production.",
         "Production runs {s} {v}."),
        ("{S} was bumped from {old} to {new}.", "{S} {new} is now live in production.",
         "We upgraded {s} to version {new}.", "Production is on {s} {new} now, not {old}."),
        ("Customers currently get {s} build {v}.", "Whoever installs {s} today ends up with {v}."),
        ("Which version of {s} is in production?", "What release of {s} are we running?"),
    ),
    Attribute(
        "budget", "number", ("$40,000", "$55,000", "$120,000", "$25,000", "$80,000", "$65,000"),
        ("{S} has a quarterly budget of {v}.", "Finance approved {v} per quarter for {s}.",
         "The {n} budget is {v} a quarter."),
        ("{S}'s budget was changed from {old} to {new} a quarter.", "{S}'s quarterly budget is now {new}.",
         "The {n} budget was {old} but is now {new}.", "Finance set {s} at {new} per quarter instead of {old}."),
        ("Each quarter {s} can spend up to {v}.", "Spending on {s} is capped at {v} every three months."),
        ("What is the quarterly budget for {s}?", "How much can {s} spend each quarter?"),
    ),
    Attribute(
        "flags", "negation", (),
        ("{S} [ships every change behind feature flags].", "{S} [gates each release behind a feature flag].",
         "All {n} changes [go out behind feature flags]."),
        ("{S} [no longer uses feature flags].", "{S} [stopped gating releases behind flags].",
         "Feature flags [are not used on {s} anymore].", "{S} [dropped feature flags] and ships straight to prod."),
        ("Nothing in {s} reaches users unless a toggle turns it on.",
         "Every {n} rollout is controlled with a switch we can flip off."),
        ("Does {s} still use feature flags?", "Are {s} releases gated by feature flags?"),
    ),
    Attribute(
        "ci", "name", ("Jenkins", "GitHub Actions", "CircleCI", "GitLab CI", "Buildkite", "Travis CI"),
        ("{S} builds on {v}.", "The CI for {s} is {v}.", "{S}'s pipeline runs in {v}."),
        ("{S} switched from {old} to {new} for CI.", "{S} now builds on {new}.",
         "We replaced {old} with {new} for {s}.", "{S}'s builds run on {new} instead of {old}."),
        ("Every pull request against {s} is checked by {v}.", "Whenever someone pushes to {s}, {v} runs the tests."),
        ("Which CI system builds {s}?", "What runs the {n} pipeline?"),
    ),
)

SERVICE = (
    Attribute(
        "oncall", "name", PEOPLE,
        ("{v} is on call for {s} this month.", "Pages for {s} go to {v}.", "{S}'s primary on-call engineer is {v}."),
        ("{new} took over the {n} on-call from {old}.", "Pages for {s} now go to {new}.",
         "{old} is off the {n} rotation; {new} is on call now.", "On-call for {s} switched from {old} to {new}."),
        ("If {s} breaks tonight, {v} gets woken up.", "{v} carries the pager whenever {s} misbehaves."),
        ("Who is on call for {s}?", "Who gets paged when {s} fails?"),
    ),
    Attribute(
        "latency", "number", ("200 ms", "250 ms", "300 ms", "150 ms", "400 ms", "120 ms"),
        ("{S} has a p99 latency budget of {v}.", "The p99 target for {s} is {v}.",
         "{S} must answer within {v} at p99."),
        ("{S}'s p99 budget changed from {old} to {new}.", "The p99 target for {s} is now {new}.",
         "We set {s}'s latency target to {new} instead of {old}.", "{S} now has to respond within {new} at p99."),
        ("Ninety-nine percent of {n} requests should finish in under {v}.",
         "Anything slower than {v} at the 99th percentile counts as a breach for {s}."),
        ("What is the p99 latency budget for {s}?", "How fast must {s} respond at p99?"),
    ),
    Attribute(
        "replicas", "number", ("2", "3", "4", "6", "8", "12"),
        ("{S} runs {v} replicas in production.", "We keep {v} replicas of {s} running.",
         "{S} is deployed as {v} replicas."),
        ("{S} was scaled from {old} to {new} replicas.", "{S} now runs {new} replicas.",
         "We run {new} instances of {s} now instead of {old}.", "Replica count for {s}: was {old}, is now {new}."),
        ("Production keeps {v} copies of {s} up behind the load balancer.", "The {n} deployment has {v} pods."),
        ("How many replicas does {s} run?", "How many instances of {s} are in production?"),
    ),
    Attribute(
        "language", "name", ("Go", "Rust", "Python", "Kotlin", "TypeScript", "Java"),
        ("{S} is written in {v}.", "The code of {s} is {v}.", "{S} is a {v} codebase."),
        ("{S} was rewritten from {old} to {new}.", "{S} is now written in {new}.",
         "We ported {s} to {new}; the {old} version is gone.", "{S} is a {new} codebase now, no longer {old}."),
        ("Anyone touching {s} needs to know {v}.", "Engineers working on {s} write {v} all day."),
        ("What language is {s} written in?", "Which programming language does {s} use?"),
    ),
    Attribute(
        "queue", "name", ("RabbitMQ", "Amazon SQS", "Kafka", "Redis streams", "NATS", "Google Pub/Sub"),
        ("{S} reads its jobs from {v}.", "{S} uses {v} as its message queue.", "Messages for {s} travel over {v}."),
        ("{S} switched from {old} to {new}.", "{S} now consumes from {new}.",
         "{S} moved its queue off {old} onto {new}.", "{S} uses {new} instead of {old} for messages."),
        ("Work arrives at {s} through {v}.", "{v} is the broker sitting in front of {s}."),
        ("Which message queue does {s} use?", "Where does {s} get its jobs from?"),
    ),
    Attribute(
        "mtls", "negation", (),
        ("{S} [requires mutual TLS for every caller].", "Callers of {s} [must present a client certificate].",
         "{S} [only accepts mTLS connections]."),
        ("{S} [no longer requires mutual TLS].", "Callers of {s} [do not need a client certificate anymore].",
         "{S} [dropped the mTLS requirement].", "[mTLS is not enforced] on {s} any more."),
        ("Nobody can call {s} without a signed client cert.",
         "Connections to {s} are refused unless both sides authenticate with certificates."),
        ("Does {s} still require mTLS?", "Do callers of {s} need client certificates?"),
    ),
    Attribute(
        "dashboard", "other",
        ("https://grafana.example.com/d/{slug}", "https://grafana.example.com/d/{slug}-v2",
         "https://metrics.example.com/{slug}", "https://status.example.com/{slug}"),
        ("The {n} dashboard is at {v}.", "{S}'s metrics live on {v}.", "Graphs for {s} are at {v}."),
        ("The {n} dashboard moved to {new}.", "{S}'s metrics are now on {new}.",
         "Use {new} for {n} graphs; {old} is retired.", "The {n} dashboard was {old} and is now {new}."),
        ("Open {v} to see how {s} is doing.", "Bookmark {v} for latency and error charts."),
        ("Where is the {n} dashboard?", "Which URL shows the metrics for {s}?"),
    ),
    Attribute(
        "window", "date",
        ("Sunday 02:00 UTC", "Saturday 23:00 UTC", "Tuesday 04:00 UTC", "Wednesday 01:00 UTC", "Thursday 03:00 UTC"),
        ("{S}'s maintenance window is {v}.", "We patch {s} every {v}.", "Planned downtime for {s} happens on {v}."),
        ("{S}'s maintenance window moved from {old} to {new}.", "We now patch {s} every {new}.",
         "Downtime for {s} is {new} from now on, not {old}.", "{S} maintenance shifted to {new}."),
        ("Expect {s} to be briefly offline each {v} for upgrades.", "Upgrades to {s} roll out weekly at {v}."),
        ("When is the maintenance window for {s}?", "When is {s} patched?"),
    ),
)

PERSON = (
    Attribute(
        "office", "name", ("Lisbon", "Berlin", "Toronto", "Nairobi", "Singapore", "Austin", "Dublin", "Kraków"),
        ("{S} works from the {v} office.", "{S} is based in {v}.", "{S}'s desk is in our {v} office."),
        ("{S} moved from {old} to {new}.", "{S} is now based in {new}.", "{S} relocated to {new}, leaving {old}.",
         "{S} works out of {new} instead of {old} now."),
        ("If you want to meet {s} in person, go to {v}.", "{S} lives near {v} and commutes to the office there."),
        ("Which office is {s} in?", "Where is {s} based?"),
    ),
    Attribute(
        "manager", "name", PEOPLE,
        ("{S} reports to {v}.", "{v} is {s}'s manager.", "{S}'s line manager is {v}."),
        ("{S} now reports to {new}.", "{S}'s manager changed from {old} to {new}.",
         "{new} replaced {old} as {s}'s manager.", "{S} no longer reports to {old}; {new} manages them now."),
        ("{v} runs {s}'s one-on-ones and writes the reviews.", "Performance reviews for {s} are done by {v}."),
        ("Who is {s}'s manager?", "Who does {s} report to?"),
    ),
    Attribute(
        "role", "other",
        ("staff engineer", "engineering manager", "product designer", "data scientist", "site reliability engineer",
         "product manager", "QA lead"),
        ("{S} works as our {v}.", "{S}'s title is {v}.", "{S} joined us as {v}."),
        ("{S} moved from {old} to {new}.", "{S} is now our {new}.", "{S} switched roles: {old} before, {new} now.",
         "{S}'s title changed to {new}."),
        ("On the org chart, {s} appears as {v}.", "{S} holds the {v} position on the team."),
        ("What is {s}'s role?", "What does {s} do here?"),
    ),
    Attribute(
        "leave", "date",
        ("August 4 to August 18", "July 7 to July 21", "December 22 to January 5", "October 13 to October 24",
         "May 26 to June 6"),
        ("{S} is on leave from {v}.", "{S} will be out of office {v}.", "{S}'s vacation runs {v}."),
        ("{S} moved their leave to {new}.", "{S} is now off {new} instead of {old}.",
         "{S}'s vacation changed from {old} to {new}.", "{S} will be away {new} now."),
        ("Don't count on {s} for {v}; they are travelling.", "Cover {s}'s reviews for {v} while they rest."),
        ("When is {s} on leave?", "When is {s} out of office?"),
    ),
    Attribute(
        "editor", "name", ("VS Code", "Neovim", "IntelliJ IDEA", "Emacs", "Zed", "Sublime Text"),
        ("{S} codes in {v}.", "{S}'s editor of choice is {v}.", "{S} prefers {v} for everyday work."),
        ("{S} switched from {old} to {new}.", "{S} uses {new} now.", "{S} gave up {old} for {new}.",
         "{S} prefers {new} these days, no longer {old}."),
        ("When pairing with {s}, expect their screen to show {v}.", "{S} has spent years tuning a {v} setup."),
        ("Which editor does {s} use?", "What does {s} write code in?"),
    ),
    Attribute(
        "fridays", "negation", (),
        ("{S} [works remotely on Fridays].", "{S} [stays home on Fridays].", "On Fridays {s} [is always remote]."),
        ("{S} [no longer works remotely on Fridays].", "{S} [is back in the office on Fridays].",
         "{S} [stopped working from home on Fridays].", "On Fridays {s} [is not remote anymore]."),
        ("Don't look for {s} at their desk at the end of the week; they work from home.",
         "The last weekday is {s}'s home-office day."),
        ("Does {s} still work remotely on Fridays?", "Is {s} in the office on Fridays?"),
    ),
    Attribute(
        "timezone", "other", ("UTC+1", "UTC-5", "UTC+9", "UTC+5:30", "UTC-8", "UTC+3"),
        ("{S} keeps {v} hours.", "{S} is in the {v} time zone.", "{S}'s working hours follow {v}."),
        ("{S}'s time zone changed from {old} to {new}.", "{S} is on {new} now.",
         "{S} works {new} hours instead of {old}.", "{S} moved to {new}."),
        ("Schedule calls with {s} for their mornings in {v}.", "For {s}, the clock reads {v}."),
        ("Which time zone is {s} in?", "What hours does {s} keep?"),
    ),
    Attribute(
        "drink", "other",
        ("oat flat white", "black filter coffee", "green tea", "double espresso", "chai latte", "sparkling water"),
        ("{S} drinks {v} in the morning.", "{S}'s usual order is {v}.", "{S} likes {v} at team breakfasts."),
        ("{S} switched from {old} to {new}.", "{S} drinks {new} now.", "{S} gave up {old}; it's {new} now.",
         "{S} orders {new} instead of {old} these days."),
        ("When you fetch drinks, get {s} {v}.", "Bring {v} for {s} if you do a coffee run."),
        ("What does {s} drink?", "What should I order for {s}?"),
    ),
)

TEAM = (
    Attribute(
        "sprint", "number", ("2", "3", "4", "6"),
        ("{S} works in {v}-week sprints.", "Sprints on {s} last {v} weeks.", "{S} plans its work in {v}-week cycles."),
        ("{S} moved from {old}-week to {new}-week sprints.", "{S}'s sprints are now {new} weeks long.",
         "{S} switched to {new}-week sprints.", "Sprints on {s} last {new} weeks instead of {old}."),
        ("Every {v} weeks {s} starts a new iteration with a planning session.",
         "A {n} iteration is {v} weeks from kickoff to demo."),
        ("How long are {s}'s sprints?", "How many weeks is a sprint on {s}?"),
    ),
    Attribute(
        "standup", "other", ("9:30", "10:00", "11:15", "8:45", "9:00"),
        ("{S} holds standup at {v}.", "Daily standup for {s} starts at {v}.", "{S} meets every morning at {v}."),
        ("{S}'s standup moved from {old} to {new}.", "Standup for {s} is now at {new}.",
         "{S} meets at {new} instead of {old}.", "{S} shifted the daily sync to {new}."),
        ("Be on the {n} call at {v} each weekday for the quick status round.",
         "At {v} sharp, {s} goes around the room on yesterday and today."),
        ("What time is {s}'s standup?", "When does {s} meet each day?"),
    ),
    Attribute(
        "tracker", "name", ("Jira", "Linear", "Asana", "Shortcut", "GitHub Projects", "Trello"),
        ("{S} tracks its work in {v}.", "{S}'s tickets live in {v}.", "{S} plans sprints in {v}."),
        ("{S} moved its tickets from {old} to {new}.", "{S} tracks work in {new} now.",
         "{S} replaced {old} with {new}.", "{S} uses {new} instead of {old} for tickets."),
        ("To file a bug for {s}, open a card in {v}.", "Everything {s} is busy with shows up on its {v} board."),
        ("Which tracker does {s} use?", "Where does {s} keep its tickets?"),
    ),
    Attribute(
        "planning", "date", ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"),
        ("{S} plans the sprint every {v}.", "Sprint planning for {s} happens on {v}.",
         "{S} picks next sprint's work each {v} morning."),
        ("{S} moved planning from {old} to {new}.", "Sprint planning for {s} is now on {new}.",
         "{S} plans on {new} instead of {old}.", "{S}'s planning day changed to {new}."),
        ("Keep {v} mornings free if you join {s}: that's when the coming iteration gets scoped.",
         "On {v} the {n} decides what goes into the next iteration."),
        ("Which day does {s} plan its sprint?", "When is {s}'s sprint planning?"),
    ),
    Attribute(
        "approvals", "negation", (),
        ("{S} [requires two approvals on every pull request].", "Pull requests on {s} [need two approving reviews].",
         "{S} [merges only after two reviewers approve]."),
        ("{S} [no longer requires two approvals].", "Pull requests on {s} [do not need two approvals anymore].",
         "{S} [dropped the two-approval rule].", "[Two approvals are not required] on {s} any more."),
        ("Nothing merges in {s}'s repos until a pair of reviewers signs off.",
         "Every {n} change needs a second reviewer's sign-off besides the first."),
        ("Does {s} still require two approvals on pull requests?", "How many reviews does a {n} pull request need?"),
    ),
    Attribute(
        "headcount", "number", ("5", "6", "8", "9", "11", "14"),
        ("{S} has {v} engineers.", "There are {v} people on {s}.", "{S} is {v} people strong."),
        ("{S} went from {old} to {new} people.", "{S} has {new} engineers now.",
         "Headcount on {s} is {new}, not {old} anymore.", "{S} is now {new} people."),
        ("The {n} roster lists {v} names.", "With {v} members, {s} fills a whole meeting room."),
        ("How many people are on {s}?", "What is {s}'s headcount?"),
    ),
    Attribute(
        "offsite", "name", ("Porto", "Tallinn", "Lake Como", "Edinburgh", "Kyoto", "Cape Town"),
        ("{S}'s offsite this year is in {v}.", "{S} meets in {v} for its annual offsite.",
         "The {n} offsite will be held in {v}."),
        ("{S}'s offsite moved from {old} to {new}.", "The {n} offsite is now in {new}.",
         "{S} is going to {new} instead of {old} for the offsite.", "{S} switched the offsite venue to {new}."),
        ("Book flights to {v} for the {n} get-together.", "{S} will gather in {v} for a few days of planning."),
        ("Where is {s}'s offsite?", "Where does {s} gather for the annual offsite?"),
    ),
    Attribute(
        "channel", "other", ("#{slug}", "#{slug}-eng", "#team-{slug}", "#{slug}-help"),
        ("{S} chats in {v}.", "{S}'s Slack channel is {v}.", "Ping {s} in {v}."),
        ("{S} moved its channel from {old} to {new}.", "{S}'s Slack channel is now {new}.",
         "Ping {s} in {new}; {old} is archived.", "{S} renamed {old} to {new}."),
        ("Questions for {s} go to the {v} Slack room.", "Drop a message in {v} to reach {s}."),
        ("Which Slack channel does {s} use?", "Where do I reach {s} on Slack?"),
    ),
)

# Fillers: facts only, one per subject, never corrected nor repeated.
FILLERS: dict[str, tuple[Attribute, ...]] = {
    "project": (
        Attribute("repo", "other", ("https://git.example.com/{slug}",),
                  ("The {n} code lives at {v}.", "{S}'s repository is {v}.")),
        Attribute("pilot", "name", ("Northwind", "Globex", "Initech", "Umbrella Health", "Acme Freight",
                                    "Blue Harbor Bank"),
                  ("{S}'s first pilot customer is {v}.", "{v} signed up as the pilot customer for {s}.")),
        Attribute("metric", "other", ("weekly active teams", "time to first report", "checkout conversion",
                                      "tickets closed per agent", "monthly retained accounts"),
                  ("{S}'s success metric is {v}.", "We judge {s} by {v}.")),
        Attribute("designdoc", "other", ("https://docs.example.com/{slug}-design",),
                  ("The {n} design doc is at {v}.", "Read {v} before changing how {s} works.")),
        Attribute("license", "name", ("Apache-2.0", "MIT", "a proprietary license", "BSD-3-Clause"),
                  ("{S} is released under {v}.", "The {n} source is licensed {v}.")),
    ),
    "service": (
        Attribute("ratelimit", "number", ("500", "1,000", "2,000", "250"),
                  ("{S} allows {v} requests per minute per client.", "Clients may send {s} {v} requests a minute.")),
        Attribute("retention", "number", ("14", "30", "90", "7"),
                  ("{S} keeps its logs for {v} days.", "Logs from {s} are deleted after {v} days.")),
        Attribute("runbook", "other", ("https://wiki.example.com/runbooks/{slug}",),
                  ("The runbook for {s} is {v}.", "When {s} pages, follow {v}.")),
        Attribute("vendor", "name", ("Stripe", "Twilio", "SendGrid", "Mapbox", "Auth0", "Cloudflare"),
                  ("{S} depends on {v}.", "{S} calls out to {v} for part of its work.")),
        Attribute("slo", "number", ("99.9%", "99.95%", "99.5%", "99.99%"),
                  ("{S} promises {v} availability.", "The availability objective of {s} is {v}.")),
    ),
    "person": (
        Attribute("github", "other", ("@{slug}",),
                  ("{S}'s GitHub handle is {v}.", "On GitHub, {s} goes by {v}.")),
        Attribute("speaks", "name", ("Portuguese", "German", "Swahili", "Japanese", "Spanish", "Polish", "Hindi"),
                  ("{S} speaks {v}.", "{S} is fluent in {v}.")),
        Attribute("joined", "date", ("2017", "2019", "2020", "2021", "2022", "2023"),
                  ("{S} joined the company in {v}.", "{S} has been with us since {v}.")),
        Attribute("allergy", "other", ("peanuts", "shellfish", "cats", "pollen", "gluten"),
                  ("{S} is allergic to {v}.", "Keep {v} away from {s}: allergy.")),
        Attribute("hobby", "other", ("bouldering", "sourdough baking", "trail running", "chess", "birdwatching"),
                  ("{S} spends weekends on {v}.", "Ask {s} about {v}; it's their hobby.")),
    ),
    "team": (
        Attribute("owns", "other", ("the build system", "the data warehouse", "the design system", "the help centre",
                                    "the login flow", "the mobile release train"),
                  ("{S} owns {v}.", "Changes to {v} need {s}'s review.")),
        Attribute("okr", "name", ("the CTO", "the VP of Product", "the VP of Engineering", "the COO"),
                  ("{S} reports its OKRs to {v}.", "{S}'s quarterly goals are reviewed by {v}.")),
        Attribute("floor", "number", ("3", "4", "5", "6"),
                  ("{S} sits on floor {v}.", "You will find {s} on floor {v}.")),
        Attribute("retro", "other", ("a shared doc", "a Miro board", "sticky notes", "a silent vote"),
                  ("{S} runs its retros with {v}.", "Retrospectives on {s} use {v}.")),
        Attribute("costcode", "other", ("ENG-{slug}",),
                  ("{S} books expenses to cost centre {v}.", "Charge {s} purchases to {v}.")),
    ),
}

ATTRIBUTES: dict[str, tuple[Attribute, ...]] = {"project": PROJECT, "service": SERVICE, "person": PERSON,
                                               "team": TEAM}
