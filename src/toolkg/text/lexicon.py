"""Word lists behind the offline extractor's rules (English; lower-case lemmas).

Kept as data, separate from the rules, so a reviewer can read and extend them in one
place. They describe English and tool documentation in general: none is keyed to a
benchmark's tool names.
"""

from __future__ import annotations

# Lead verb (lemma) -> capability class. The classes are the Capability entities tools link to.
_CAPABILITY_VERBS: dict[str, list[str]] = {
    "read": (
        "get fetch read retrieve show view load display describe list open inspect return obtain access see print"
    ).split(),
    "search": (
        "search find query lookup look browse discover explore locate filter match grep scan seek recommend suggest"
    ).split(),
    "create": "create add make insert register new build init initialize append open".split(),
    "update": (
        "update edit modify set change rename patch move replace mark assign apply write put merge tag label "
        "reorder resize rotate crop"
    ).split(),
    "delete": "delete remove cancel clear drop unsubscribe archive revoke purge close".split(),
    "send": "send post email notify publish share reply message tweet forward broadcast invite comment submit".split(),
    "convert": (
        "convert translate transform format parse encode decode export import compress extract normalize "
        "render transcribe serialize encrypt decrypt"
    ).split(),
    "compute": (
        "compute calculate count estimate sum measure evaluate solve average score rank predict forecast "
        "optimize plan route"
    ).split(),
    "analyze": (
        "analyze analyse compare classify detect validate verify check test review audit diagnose lint "
        "summarize summarise assess identify recognize"
    ).split(),
    "generate": "generate draw compose draft write design paint synthesize produce chart".split(),
    "execute": (
        "run execute start stop launch invoke trigger restart deploy install kill terminate pause resume "
        "evaluate eval play build commit push pull clone"
    ).split(),
    "transfer": "download upload save copy sync store backup restore attach fork".split(),
    "authenticate": "login logout authenticate authorize sign signin verify".split(),
    "interact": "navigate click scroll type press hover select drag fill screenshot goto".split(),
    "schedule": "schedule book reserve remind snooze reschedule".split(),
    "purchase": "buy purchase pay checkout rent donate tip refund charge".split(),
    "monitor": "monitor watch track subscribe ping poll observe log follow".split(),
    "manage": "manage configure enable disable toggle approve reject lock unlock grant connect pair".split(),
}

# Verb + particle -> the single verb it means ("logs the user in" -> login).
PHRASAL_VERBS: dict[tuple[str, str], str] = {
    ("log", "in"): "login",
    ("log", "into"): "login",
    ("log", "out"): "logout",
    ("sign", "in"): "signin",
    ("sign", "into"): "signin",
    ("sign", "up"): "register",
    ("check", "out"): "checkout",
    ("look", "up"): "lookup",
    ("set", "up"): "configure",
    ("turn", "on"): "enable",
    ("turn", "off"): "disable",
}

# First class wins for a verb listed twice (e.g. "write": update before generate).
VERB_CAPABILITY: dict[str, str] = {}
for _capability, _verbs in _CAPABILITY_VERBS.items():
    for _verb in _verbs:
        VERB_CAPABILITY.setdefault(_verb, _capability)

CAPABILITIES: tuple[str, ...] = tuple(_CAPABILITY_VERBS)

# Verbs common in descriptions that name no capability; they still end a noun phrase.
OTHER_VERBS = frozenset(
    """
    provide allow help let enable support receive require need contain accept give take ensure
    interact perform handle tell want try keep become consider expect offer indicate represent
    """.split()
)

# Words that say nothing about what a tool acts on, as a whole phrase or a phrase's edge.
GENERIC_NOUNS = frozenset(
    """
    information info data detail details result results item items value values thing things way tool tools
    function functions api request response output input parameter parameters option options type types format
    number string list set use usage operation operations action actions method methods call support
    specific specified given provided current new optional relevant available particular certain different
    additional single multiple various full basic simple default custom general main more most many much
    other same such own each every all any some few several latest recent possible necessary required
    num max min total param params arg args
    whether etc via using based including include includes following also only just near within across per
    """.split()
)

# Parameter-name words that refer to no entity by themselves (an 'id' of what? a 'limit' of what?).
PARAMETER_SUFFIXES = frozenset("id ids uuid guid key keys name names code number num no ref uri url".split())
GENERIC_PARAMETERS = frozenset(
    """
    query q limit offset page per size count max min sort order direction format verbose
    timeout fields field filter filters options option text input value values mode start end cursor
    token after before since until from to args kwargs params body data content type kind raw debug
    force dry run recursive include exclude encoding width height top k n index level depth
    """.split()
)

# Values that mean the same on every platform: a tool of one server can fill another server's
# parameter with them (a reference such as an id, name, code or category cannot: it means something
# only where it was issued). Places and times, contact points, and file and data formats.
UNIVERSAL_VALUES = frozenset(
    """
    coordinate coordinates latitude longitude lat lon lng location geolocation address city country postcode zipcode
    timezone date datetime timestamp time year month weekday
    email phone currency language locale
    base64 png jpeg jpg gif svg webp pdf docx xlsx pptx html markdown csv xml yaml
    """.split()
)

# Short forms in identifiers and the word they stand for ('repo_path' names a repository).
ABBREVIATIONS = {
    "repo": "repository",
    "repos": "repositories",
    "dir": "directory",
    "dirs": "directories",
    "doc": "document",
    "docs": "documents",
    "img": "image",
    "pic": "picture",
    "msg": "message",
    "config": "configuration",
    "db": "database",
    "env": "environment",
    "pkg": "package",
    "org": "organization",
    "addr": "address",
    "loc": "location",
}
# Heads that say only what form a value takes: a 'markdown_content' is markdown, a 'pdf_file' a PDF.
FORM_HEADS = frozenset({"content", "contents", "text", "data", "string", "body", "value", "file", "files"})

# Tokens that make a word a noun when they come just before an ambiguous verb/noun ("the search").
DETERMINERS = frozenset("the a an this that these those your its their our my his her each every any some new".split())

# Plurals the lemma table gets wrong for tool documentation (data -> datum).
KEEP_AS_IS = frozenset("data media lyrics news analytics series species physics politics metadata status".split())

# English stop words, copied from spaCy 3.8's spacy/lang/en/stop_words.py (MIT License, (C) ExplosionAI
# GmbH): importing that module imports spaCy, thinc and torch (about 2 s), which a command that never
# tokenises text should not pay. tests/unit/extractors/test_offline_extractor.py checks the copy still equals spaCy's.
STOP_WORDS: frozenset[str] = frozenset(
    """
'd 'll 'm 're 's 've a about above across after afterwards again against all almost alone along already also
although always am among amongst amount an and another any anyhow anyone anything anyway anywhere are around as
at back be became because become becomes becoming been before beforehand behind being below beside besides
between beyond both bottom but by ca call can cannot could did do does doing done down due during each eight
either eleven else elsewhere empty enough even ever every everyone everything everywhere except few fifteen
fifty first five for former formerly forty four from front full further get give go had has have he hence her
here hereafter hereby herein hereupon hers herself him himself his how however hundred i if in indeed into is it
its itself just keep last latter latterly least less made make many may me meanwhile might mine more moreover
most mostly move much must my myself n't name namely neither never nevertheless next nine no nobody none noone
nor not nothing now nowhere n‘t n’t of off often on once one only onto or other others otherwise our ours
ourselves out over own part per perhaps please put quite rather re really regarding same say see seem seemed
seeming seems serious several she should show side since six sixty so some somehow someone something sometime
sometimes somewhere still such take ten than that the their them themselves then thence there thereafter thereby
therefore therein thereupon these they third this those though three through throughout thru thus to together
too top toward towards twelve twenty two under unless until up upon us used using various very via was we well
were what whatever when whence whenever where whereafter whereas whereby wherein whereupon wherever whether
which while whither who whoever whole whom whose why will with within without would yet you your yours yourself
yourselves ‘d ‘ll ‘m ‘re ‘s ‘ve ’d ’ll ’m ’re ’s ’ve
""".split()
)
