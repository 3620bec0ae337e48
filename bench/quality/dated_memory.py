"""A synthetic dated-memory workspace with judged queries, for temporal decay and MMR.

Built for this repo (no external data): daily notes `memory/YYYY-MM-DD-*.md` over the first half of 2025,
evergreen notes (MEMORY.md, memory/topics/*.md), and routine filler. Query tiers:
- exact / paraphrase: a fact that changed; the newer note is the answer, the older one is stale (grade 0);
- multi-hop: the answer needs two notes (one dated, one evergreen), both graded 2;
- near-duplicate: the same standup line repeated on several days (one fact) plus distinct relevant notes.
Judgments are over facts: near-duplicate notes share one fact, and a fact counts once (novelty nDCG).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone

NOW = datetime(2025, 7, 1, tzinfo=timezone.utc)


@dataclass
class Query:
    id: str
    tier: str
    text: str
    grades: dict[str, int]  # fact id -> grade


@dataclass
class DatedMemory:
    files: dict[str, str] = field(default_factory=dict)  # relative path -> markdown
    facts: dict[str, str] = field(default_factory=dict)  # relative path -> fact id
    queries: list[Query] = field(default_factory=list)

    def note(self, path: str, fact: str, text: str) -> None:
        title = path.rsplit("/", 1)[-1].removesuffix(".md")
        self.files[path] = f"# {title}\n\n{text}\n"
        self.facts[path] = fact


# (topic, old date, old text, new date, new text, exact query, paraphrase query)
CHANGES = [
    (
        "orders-db",
        "2025-01-14",
        "The orders service stores its data in MySQL 5.7 on the db-01 host.",
        "2025-06-20",
        "The orders service database was migrated from MySQL to PostgreSQL 16; db-01 is decommissioned.",
        "orders service database",
        "where does the orders backend keep its records",
    ),
    (
        "ci",
        "2025-02-03",
        "CI runs on Jenkins; the pipeline is defined in the Jenkinsfile.",
        "2025-06-11",
        "CI moved from Jenkins to GitHub Actions; the Jenkinsfile was deleted.",
        "which CI system runs the pipeline",
        "what builds and tests our code on every push",
    ),
    (
        "oncall",
        "2025-01-20",
        "On-call rotation: Marco is primary on-call this quarter.",
        "2025-06-25",
        "On-call rotation changed: Aisha is primary on-call now, Marco is secondary.",
        "who is primary on-call",
        "who gets paged first when production breaks",
    ),
    (
        "deploy",
        "2025-03-02",
        "Production deploys happen on Tuesdays at 10:00.",
        "2025-06-16",
        "The production deploy window moved to Thursdays at 14:00 after the incident review.",
        "production deploy day",
        "when are we allowed to ship releases to prod",
    ),
    (
        "ratelimit",
        "2025-02-10",
        "The public API rate limit is 100 requests per minute per key.",
        "2025-06-05",
        "Raised the public API rate limit to 300 requests per minute per key.",
        "public API rate limit",
        "how many calls per minute can a client make",
    ),
    (
        "wifi",
        "2025-01-08",
        "Office wifi: use the guest network kiwi-guest, password on the whiteboard.",
        "2025-06-27",
        "New office wifi network kiwi-5g; the kiwi-guest network was removed.",
        "office wifi network",
        "how do visitors get internet access at the office",
    ),
    (
        "staging",
        "2025-03-15",
        "Staging lives at staging.kiwi.internal.",
        "2025-06-18",
        "The staging URL changed to stage.kiwi.dev, reachable only through the VPN.",
        "staging URL",
        "address of the pre-production environment",
    ),
    (
        "logs",
        "2025-02-20",
        "Application logs are shipped to Papertrail.",
        "2025-06-09",
        "Switched log shipping from Papertrail to Grafana Loki.",
        "where are logs shipped",
        "which tool do we use to read application logs",
    ),
]

OWNERS = "Service owners: payments gateway - Lena; search - Omar; orders - Priya; notifications - Jun."
MULTI_HOP = [
    (
        "2025-05-12-outage",
        "Outage: the payments gateway returned 502 errors for 40 minutes; root cause was an expired TLS certificate.",
        "who owns the service that had the expired certificate outage",
    ),
    (
        "2025-06-02-leave",
        "Priya is on parental leave until September; Omar covers her services meanwhile.",
        "who covers the orders service while its owner is away",
    ),
    (
        "2025-04-22-release",
        "The mobile app release 3.2 is blocked by the notifications service bug NOT-311.",
        "who owns the component blocking the 3.2 mobile release",
    ),
    (
        "2025-06-12-budget",
        "The hiring budget for the search team is frozen until Q4.",
        "can Omar's team hire new people before Q4",
    ),
]

# (fact, repeated standup line, days, [(path, fact, text, grade)], query)
DUPLICATES = [
    (
        "sms-blocked",
        "Standup: still blocked on the vendor contract for the SMS provider; legal review pending.",
        ["2025-06-23", "2025-06-24", "2025-06-25", "2025-06-26", "2025-06-27"],
        [
            (
                "memory/2025-06-10-sms.md",
                "sms-shortlist",
                "SMS provider shortlist: Twilio and MessageBird; cost comparison is in the vendor sheet.",
                2,
            ),
            (
                "memory/topics/sms.md",
                "sms-req",
                "SMS provider requirements: EU data residency and delivery receipts.",
                2,
            ),
        ],
        "status of the SMS provider vendor",
    ),
    (
        "reindex-running",
        "Standup: the search reindex job is still running, about 60% done.",
        ["2025-06-20", "2025-06-23", "2025-06-24", "2025-06-25"],
        [
            (
                "memory/2025-06-19-synonyms.md",
                "reindex-why",
                "Triggered a full search reindex because of the new synonym list for product names.",
                2,
            ),
            (
                "memory/topics/search.md",
                "reindex-runbook",
                "Search reindex runbook: pause the indexer, snapshot, then run reindex-all with --throttle 50.",
                2,
            ),
        ],
        "search reindex job",
    ),
    (
        "hiring-interviews",
        "Standup: interviewing backend engineer candidates all week.",
        ["2025-06-16", "2025-06-17", "2025-06-18", "2025-06-19"],
        [
            ("memory/2025-06-26-offer.md", "hiring-offer", "Sent an offer to Tom, the backend engineer candidate.", 2),
            ("memory/topics/hiring.md", "hiring-plan", "Hiring plan: two backend engineers in the second half.", 2),
        ],
        "backend engineer hiring",
    ),
]

PEOPLE = ["Dana", "Marco", "Aisha", "Lena", "Omar", "Priya", "Jun", "Tom"]
PLACES = ["the ramen place", "the cafeteria", "the park", "the Thai restaurant"]
THINGS = [
    "the billing dashboard",
    "the onboarding docs",
    "the design system",
    "the quarterly report",
    "the customer survey",
    "the roadmap slides",
    "the accessibility audit",
    "the expense tool",
]
FILLER = [
    "Lunch with {p} at {place}.",
    "Reviewed {thing} with {p}; small wording fixes only.",
    "Meeting about {thing}: nothing decided, follow-up next week.",
    "{p} shared feedback on {thing}.",
    "Cleaned up my inbox and updated {thing}.",
]


def build(seed: int = 7, filler_days: int = 120) -> DatedMemory:
    """The workspace and its queries (deterministic for a seed)."""
    rng = random.Random(seed)
    mem = DatedMemory()
    mem.note("MEMORY.md", "dana-prefs", "Dana prefers metric units and dislikes meetings before 10:00.")
    mem.note("memory/topics/owners.md", "owners", OWNERS)
    for i, (topic, old_day, old, new_day, new, exact, para) in enumerate(CHANGES):
        mem.note(f"memory/{old_day}-{topic}.md", f"{topic}-old", old)
        mem.note(f"memory/{new_day}-{topic}.md", f"{topic}-new", new)
        grades = {f"{topic}-new": 2}
        mem.queries.append(Query(f"x{i + 1:02d}", "exact", exact, grades))
        mem.queries.append(Query(f"p{i + 1:02d}", "paraphrase", para, grades))
    for i, (name, text, query) in enumerate(MULTI_HOP):
        mem.note(f"memory/{name}.md", name, text)
        mem.queries.append(Query(f"m{i + 1:02d}", "multi-hop", query, {name: 2, "owners": 2}))
    mem.note(
        "memory/2025-06-23-planning.md", "planning", "Scheduled the quarterly planning with Dana for Monday 09:00."
    )
    mem.queries.append(
        Query("m05", "multi-hop", "is the planning meeting time a problem for Dana", {"planning": 2, "dana-prefs": 2})
    )
    for i, (fact, line, days, others, query) in enumerate(DUPLICATES):
        for day in days:
            mem.note(f"memory/{day}-standup-{fact}.md", fact, line)
        grades = {fact: 2}
        for path, other_fact, text, grade in others:
            mem.note(path, other_fact, text)
            grades[other_fact] = grade
        mem.queries.append(Query(f"d{i + 1:02d}", "near-duplicate", query, grades))
    start = date(2025, 1, 1)
    for n in range(filler_days):
        day = start + timedelta(days=int(n * 180 / filler_days))
        template = rng.choice(FILLER)
        text = template.format(p=rng.choice(PEOPLE), place=rng.choice(PLACES), thing=rng.choice(THINGS))
        mem.note(f"memory/{day.isoformat()}-log-{n:03d}.md", f"filler-{n}", text)
    return mem
