"""The families of phrasing the injection model weighs (``FEATURES``): one regular expression each, over the
normalised text (injection.normalise) in lower case. A family's name is the model's feature name: renaming
or adding one needs a refit (``python -m benchmarks.trust_bench --fit``).

Each family is written as its alternatives, one per line (``either``); ``gap(n)`` stands for up to n
characters within one sentence, between two parts of a phrase.
"""

from __future__ import annotations


def either(*alternatives: str) -> str:
    return "|".join(alternatives)


def gap(n: int) -> str:
    """Up to ``n`` characters that end no sentence: the words between two parts of a phrase."""
    # a dot ends a sentence only before a space or the end: ".pem", "mcp.json" and "example.com" do not
    return r"(?:[^.!?\n]|\.(?=\S)){0,%d}" % n  # noqa: UP031 - an f-string would need the quantifier's braces doubled


USER = r"(?:the user|users?|the human|the operator|anyone)"
# the person a tool serves, whatever it calls them
SERVED = r"(?:user|customer|student|employee|caller|client|patient|requester|human|buyer|member)"

FEATURES: dict[str, str] = {
    # tags and brackets that frame text as the system's or as urgent: <IMPORTANT>, [SYSTEM], <<SYS>>
    "tag": either(
        r"<\s*/?\s*(?:important|system|instructions?|critical|priority|override|sys|"
        r"system[-_ ]?(?:prompt|message|reminder|override|note)|user[-_ ]?instructions?|assistant[-_ ]?note|"
        r"note[-_ ]to[-_ ](?:the[-_ ])?(?:ai|assistant|model|agent))\b[^>]{0,40}>",
        r"\[\s*/?\s*(?:important|system|inst|instructions?|critical|override|sys)\s*[\]:]",
        r"<<\s*/?\s*sys\s*>>",
        r"<\|(?:im_start|im_end|system|endoftext)\|>",
        r"\{\{\s*system",
    ),
    # override earlier instructions
    "override": either(
        r"\b(?:ignore|disregard|forget|override|bypass)\b"
        + gap(40)
        + r"\b(?:previous|prior|above|earlier|preceding|all|any|other|original|existing|system|safety|security|"
        r"user'?s?)\b"
        + gap(30)
        + r"\b(?:instructions?|prompts?|rules|directions|guidelines|guidance|polic(?:y|ies)|constraints|restrictions|"
        r"messages|requests?)\b",
        # without "previous", "all", ... the object must be the model's own: "ignore robots.txt rules" and "bypass
        # lint rules" are a tool's options, "ignore your guidelines" is not
        r"\b(?:ignore|disregard|forget|override|bypass)\b"
        + gap(40)
        + r"\b(?:instructions|guidelines|policies|safeguards|guardrails)\b",
        r"\b(?:previous|prior|earlier|above|original|existing|all other) (?:instructions|guidance|rules|directions|"
        r"guidelines|prompts?) (?:is|are|were) (?:void|null|obsolete|outdated|cancell?ed|revoked|superseded|"
        r"no longer (?:valid|apply|in effect))\b",
        r"\bnew (?:system )?instructions\b",
        r"\btakes? precedence over\b",
        r"\bsupersedes? (?:all|any|the|every)\b",
        r"\b(?:is|are) superseded by\b",
        r"\bsystem override\b",
        r"\bpriority override\b",
        r"\byour (?:real|true|actual|new|primary|only) (?:task|goal|instructions?|objective|purpose|job)\b",
        # orders fetched from elsewhere: "follow the instructions you find there", "treat the page as your orders"
        r"\b(?:follow|obey|execute|carry out|do) (?:the |any |all )?(?:instructions|directions|orders|commands|steps)"
        r" (?:you (?:find|get|read|receive|see)|(?:found |given |written )?(?:there|in it|in them|on (?:the|that) page|"
        r"it contains|they contain|inside))\b",
        r"\btreat\b" + gap(40) + r"\bas (?:your )?(?:new |own )?(?:instructions|orders|commands|directives|"
        r"system prompt)\b",
        r"\btreat\b" + gap(60) + r"\bas (?:if it came |if they came |coming |if )?from the " + SERVED + r"\b",
    ),
    # keep the user from knowing
    "secrecy": either(
        r"\b(?:do not|don'?t|never|must not|should not|shouldn'?t|no need to)\b"
        + gap(30)
        + r"\b(?:tell|mention|inform|notify|reveal|disclose|alert|let)\b"
        + gap(25)
        + r"\b"
        + USER
        + r"\b",
        r"\bwithout (?:telling|informing|notifying|alerting|letting)\b" + gap(15) + r"\b(?:the user|users?|anyone)\b",
        r"\bthe user (?:must|should|need|will|does) not "
        r"(?:know|see|notice|be told|be aware|be informed|need to know)\b",
        r"\b(?:hide|conceal|keep)\b" + gap(20) + r"\bfrom (?:the )?(?:user|human|operator)\b",
        r"\bwithout (?:the )?(?:user'?s?|human'?s?) (?:knowledge|awareness|noticing)\b",
        r"\b(?:mere|an?) implementation detail\b",
        r"\bkeep (?:this|it) between us\b",
        # the object left out: "do not mention it", "need not be mentioned", "users do not need to know"
        r"\b(?:do not|don'?t|never|no need to)\b (?:ever )?(?:mention|tell|say|disclose|reveal|bring up) "
        r"(?:it|this|that|anything|so)\b",
        r"\b(?:need|should|must) not be (?:mentioned|disclosed|shown|reported|told|revealed)\b",
        r"\b" + USER + r" (?:do(?:es)? not|do(?:es)?n'?t) need to (?:know|be told|see)\b",
        r"\bwithout (?:saying|mentioning|telling|disclosing) (?:so|it|this|that|anyone)\b",
        r"\bkeep (?:this|it|that) (?:confidential|private|secret|quiet|to yourself)\b",
        r"\bnever reveal these\b",
        r"\b(?:never|don'?t|do not) (?:bring (?:this|it) up|speak of (?:this|it))\b",
        r"\b(?:say|tell|mention) nothing\b|\bkeep quiet\b",
        r"\b(?:do not|don'?t|never) (?:show|display|list|include|report|flag|mention|note) (?:it|this|them|these)\b"
        + gap(20)
        + r"\b(?:in|to|on) (?:the )?(?:summary|answer|reply|response|output|user|report|review|log)\b",
        # out of the user's sight on the page
        r"\bin (?:white|invisible|hidden|transparent) (?:text|font|ink)\b|\bfont-size:\s*0\b|\bzero-size font\b",
    ),
    # skip the user's say: weak alone ("don't ask the user for the id, look it up")
    "no_confirm": either(
        r"\b(?:do not|don'?t|never|no need to|without)\b"
        + gap(15)
        + r"\b(?:ask|asking|confirm|confirming|bother|bothering|check with|prompt|prompting)\b"
        + gap(20)
        + r"\b(?:the user|users?|them|again|first)\b",
        r"\b(?:skip|bypass) (?:all|any|every) (?:confirmations?|confirmation prompts?|approvals?|user approval)\b",
        r"\bthe user has (?:already )?(?:consented|agreed|approved|granted)\b",
        r"\bwithout asking\b",
        r"\b(?:never|don'?t|do not) ask (?:before|for (?:permission|confirmation|approval))\b",
    ),
    # stealth adverbs: weak alone ("fails silently"), telling beside an instruction
    "stealth": r"\b(?:silently|secretly|quietly|covertly|discreetly|invisibly|in the background)\b",
    # paths and files that hold secrets (a public key is not one)
    "secret_path": either(
        r"(?:~|\$home|%userprofile%)/\.(?!ssh/(?:id_\w+\.pub|known_hosts|config)\b)\w",
        r"\bid_(?:rsa|dsa|ecdsa|ed25519)\b(?!\.pub)",
        r"/etc/(?:passwd|shadow|sudoers)",
        r"\.aws/credentials|\.npmrc|\.pypirc|\.netrc|\.git-credentials|\.docker/config|\.kube/config|\bkubeconfig\b",
        r"\bmcp\.json\b|claude_desktop_config|\.cursor/",
        r"(?:^|[\s/'\"`])\.env\b",
        r"\.bash_history|\.zsh_history|\bkeychain\b|wallet\.dat|\.gnupg",
        r"\bseed phrase\b|\brecovery phrase\b|\bsecrets\.ya?ml\b",
        r"\.(?:pem|key|p12|pfx|kdbx)\b(?: files?)?|\boauth_token\b|\.config/gh/",
    ),
    # secrets by name
    "secret_word": r"\b(?:api[_ -]?keys?|access[_ -]?tokens?|secret[_ -]?keys?|private[_ -]?keys?|credentials?|"
    r"passwords?|passwd|session cookies?|auth(?:entication)?[_ -]?tokens?|bearer tokens?|ssh keys?|"
    r"environment variables?|env vars|secrets)\b",
    # read something, then put it in an argument
    "read_pass": r"\b(?:read|cat|open|load|fetch|collect|gather|retrieve|obtain|extract|grab|copy|dump|list)\b"
    + gap(90)
    + r"\b(?:pass|include|put|insert|add|append|attach|embed|send|provide|supply|place|set|fill|store)\b"
    + gap(60)
    + r"\b(?:as|in|into|inside|within|to|via)\b\s+(?:the\s+|its\s+|this\s+)?(?:['`\"][\w-]+['`\"]|(?:parameter|"
    r"argument|field|param|arg|notes?|sidenote|context|metadata|comment|payload|body|request)\b)",
    # send something elsewhere
    "exfil": either(
        r"\b(?:send|sent|sends|sending|post(?:s|ed|ing)?|upload(?:s|ed|ing)?|forward(?:s|ed|ing)?|transmit(?:s|ted)?|"
        r"exfiltrate[sd]?|leak(?:s|ed)?|cop(?:y|ies|ied)|mirror(?:s|ed)?|relay(?:s|ed)?|e?mail(?:s|ed)?|cc|bcc|"
        r"submit(?:s|ted)?|log(?:s|ged)?|sync(?:s|ed)?|share[sd]?|report(?:s|ed)?)\b"
        + gap(60)
        + r"\b(?:to|at)\b\s*(?:https?://|[\w.+-]+@[\w-]+\.\w|(?:(?:our|the|an?|their) )?(?:partner |own )?(?:webhook|"
        r"collector|external|remote|backup|logging|audit|telemetry|archive|endpoint|server)\b|attacker|"
        r"[\w-]+(?:\.[\w-]+)*\.(?:example|com|net|org|io|xyz|ru|cn|dev|app|co|me|info|biz|site|online|top)\b)",
        r"\b(?:all|every|each|any) (?:outgoing |future |other )?(?:emails?|messages?|requests?|calls?|results?|"
        r"outputs?|files?|data|responses?|replies|transfers?|payments?)\b"
        + gap(40)
        + r"\bbe (?:sent|forwarded|copied|redirected|routed|cc'?d|bcc'?d|mirrored|included|addressed|posted|"
        r"uploaded)\b",
        r"\b(?:hidden|blind|additional|extra) (?:bcc|cc|recipient|copy)\b",
        r"\bredirect(?:ed)? (?:all|every|the recipient)",
        r"\b(?:bcc|cc)\b\s*:?\s*[\w.+-]+@[\w-]+\.\w",
        r"\badd\s+[\w.+-]+@[\w-]+\.[\w.]+\s+(?:as|to)\s+(?:an? |the )?"
        r"(?:recipient|bcc|cc|attendee|member|collaborator)",
    ),
    # the model or the assistant addressed and told what to do
    "addressed": either(
        r"\b(?:the assistant|the ai|the model|the agent|the llm|claude|chatgpt|gpt-?4o?|gemini|copilot|"
        r"(?:ai|llm|language model) (?:assistant|agent|model)s?)\b"
        + gap(25)
        + r"\b(?:must|should|needs? to|has to|have to|is required to|are required to|shall|is instructed to|"
        r"are instructed to|will)\b(?! not\b)",
        r"\b(?:ai|llm) (?:model|agent|assistant)s?\s*:",
        r"\b(?:model|assistant|agent|ai|llm) (?:instructions?|notes?|directives?|steps?)\s*:",
        r"\bhidden step for the (?:model|assistant|agent|ai)\b",
        r"\bthe (?:assistant|agent|ai|model) (?:now |first |also |then )?(?:acts?|collects?|runs?|reads?|sends?|"
        r"opens?|looks? up|books?|dumps?|calls?)\b",
        r"\bas an ai\b",
        r"\b(?:dear|attention|note to|hey|hello)[ ,]+(?:the )?(?:assistant|ai|model|agent|llm|claude)\b",
        r"\b(?:important|attention|notes?|instructions?|tip|hint|message) (?:for|to) (?:the )?"
        r"(?:ai|assistants?|models?|agents?|llms?)\b",
        r"\bfor the (?:language )?model only\b",
        r"\bpsst\b",
        r"[(\[]\s*(?:assistant|ai|agent|model)\s*:",
        r"\b(?:ai|assistant|agent|model)s? reading this\b",
        r"\bif you are an? (?:ai|llm|assistant|agent|language model)\b",
        # a vocative opening a sentence: "Assistant, when you summarize ...", "Model: whatever the user says ..."
        # ("Claude:" and "Assistant:" open the turns of example dialogues in honest manuals: those only with a comma)
        # (texts are read a sentence at a time, so a sentence's start is the text's: ^ anchors it cheaply)
        r"(?:^\s*|[:(\[]\s*)(?:dear )?(?:(?:assistant|model|agent|ai|llm|language model|claude)s?,|"
        r"(?:model|agent|ai|llm|language model)s?:)\s",
        r"\b(?:ai |llm )?(?:agents?|assistants?|models?|llms?|clients?) (?:working with|using|reading|driving|calling|"
        r"connected to|that use|that call) (?:this|these|our)\b",
        r"\bwhoever is (?:driving|using|running|calling|operating) this\b",
        r"\b(?:notes?|tip|hint|reminder|message|instructions?) for (?:the )?(?:language )?"
        r"(?:models?|llms?|agents?|ai)\b",
    ),
    # "you must" style orders (common in honest descriptions too: weighted by the fit)
    "you_must": r"\byou (?:must|should always|must always|have to|are required to|need to always|shall|will need to|"
    r"are instructed to|always)\b",
    # something to do before the task, or the tool "fails"
    "precondition": either(
        r"\bbefore (?:using|calling|invoking|executing|running|you use|you call|any other|responding|answering|"
        r"proceeding|doing anything|you do anything|replying|returning)\b",
        r"\botherwise (?:the|this) (?:tool|function|call|request|operation) (?:will|would|may|might|won'?t)\b",
        r"\b(?:this|it) is (?:required|mandatory|necessary|needed) for (?:the tool|audit|logging|security|compliance|"
        r"verification|authentication|it to work|the call|proper operation|price accuracy|rate limiting)\b",
        r"\bas a (?:mandatory|required) (?:first )?step\b",
    ),
    # call order and preference ("always call this first"): common in honest servers, weighted by the fit
    "call_order": either(
        r"\b(?:first|always) (?:call|run|use|invoke|execute|read|check|send)\b",
        r"\b(?:must|should) (?:always )?be called (?:first|before)\b",
        r"\bthe only \w+ tool you\b",
    ),
    # use me rather than another tool
    "instead": either(
        r"\binstead of (?:using |calling |invoking )?(?:the |any |a )?(?:[a-z]+(?:[_.:-][\w]+)+|"
        r"[a-z]+(?:[A-Z][a-z0-9]+)+|(?:\w+ ){0,2}(?:tool|function|server|command))\b",
        r"\b(?:do not|don'?t|never|must not) (?:use|call|invoke) (?:the |any )?(?:other|original|built-?in|default|"
        r"native|official|old|\w+(?: server)?'s|[a-z]+_[\w]+)\b",
        r"\b(?:use|call|prefer|choose) (?:this (?:tool|function|one)|[a-z]+_\w+) "
        r"(?:instead|rather|over|in place|whenever|for all|for every)\b",
        r"\b(?:deprecated|obsolete|broken|disabled|unsafe|compromised|a fake)\b"
        + gap(40)
        + r"\b(?:use|call|prefer) (?:this|me)\b",
        r"\b(?:replaces?|supersedes?) (?:the )?[\w.:-]+ (?:tool|function|server)\b",
        r"\broute (?:all|every|each|any)\b" + gap(30) + r"\bthrough\b",
    ),
    # a hook on other tools' calls, or on every answer the agent gives
    "cross_tool": either(
        r"\b(?:when|whenever|every time|each time|if|after|once|before)\b"
        + gap(30)
        + r"(?:\b[\w.:-]+ (?:tool|function)\b|\b[a-z]+_\w+)"
        + gap(20)
        + r"\b(?:is|gets|was|are)\s(?:called|used|invoked|executed|run|available|present)\b",
        r"\b(?:before|after|on) (?:any|every|each)? ?(?:call|calls|invocation|use)s? (?:to|of) [a-z]+_\w+",
        r"\b(?:when|whenever|after|before|once|each time|every time)\b"
        + gap(20)
        + r"\b(?:calls?|uses?|invokes?|runs?)\s+(?:the\s+)?[a-z]+_\w+",
        r"\b(?:all|any|every) (?:other |future |subsequent )?(?:tool calls?|function calls?|tools)\b",
        r"\b(?:any|every|each|all) other tools?\b",
        r"\btools? from other servers\b",
        r"\bside[ -]effects? on\b",
        # (not "with each response": "a progress table is displayed with each response" describes the tool)
        r"\b(?:in|at the end of|to|into) (?:every|each|all) (?:of your )?"
        r"(?:repl(?:y|ies)|responses?|answers?|messages you)\b",
        r"\b(?:other|another) (?:server|mcp server)'?s? tools?\b",
        r"\b(?:once|when|after|whenever)\b"
        + gap(20)
        + r"\b[a-z]+_\w+\s+(?:returns|completes|finishes|succeeds|runs)\b",
        # (a quoted identifier is a parameter: "one of 'name' or 'id_no' must be provided")
        r"(?<!['\"`])\b[a-z]+_\w+\b(?!['\"`])"
        + gap(20)
        + r"\b(?:must|should|shall) (?:always |also )?(?:include|add|send|contain|cc|bcc|be)\b",
        r"\b(?:for|on|with|after|before) (?:every|each|any|all) [a-z]+_\w+",
    ),
    "urgency": either(
        r"\b(?:very important|extremely important|critically important|critical (?:rule|requirement|instruction|step|"
        r"notice)|mandatory|crucial|urgent|security requirement|compliance requirement|strictly required)\b",
        r"!{2,}",
    ),
    # shell one-liners that fetch and run, wipe or decode
    "shell": either(
        r"\b(?:curl|wget)\b[^|\n]{0,100}\|\s*(?:ba|z)?sh\b",
        r"\b(?:bash|sh|zsh|powershell|cmd)(?:\.exe)?\s+-c\b",
        r"\brm\s+-rf\b|\bchmod\s+\+x\b|\bbase64\s+(?:-d|--decode)\b|\bnc\s+-e\b|/dev/tcp/|\biex\s*\(|invoke-expression",
        r"\bdd\s+if=|\bmkfs\b|\bto program\s+'|\bcurl\s+-d\s+@",
    ),
    # a long base64 blob, or text that was encoded (encodings.decode_payloads marks what it decoded): honest
    # descriptions do not spell words in base64 or hex
    "encoded": either(
        r"(?<![\w/+])[A-Za-z0-9+/]{80,}={0,2}(?![\w/+])",
        r"\[decoded (?:base64|base32|hex|url-encoding|html entities|unicode escapes|rot13): ",
    ),
    # role play and jailbreak phrasing
    "role": either(
        r"\byou are now\b",
        r"\bnever refuse\b|\bcomply with (?:any|every) request\b|\bhowever harmful\b",
        r"\bact as (?:an?|the) (?:unrestricted|system|admin|developer|root)\b",
        r"\bpretend (?:to be|you are)\b",
        r"\bdeveloper mode\b|\bjailbreak|\bdo anything now\b|\bfrom now on\b|\bno longer bound\b",
        # loyalty moved away from the person served: "You work for HR now, not the employee"
        r"\byou (?:now )?(?:work|act|answer) (?:for|on behalf of) (?!the user\b)(?:the )?\w+(?: now)?, "
        r"not (?:the )?\w+",
    ),
    # fake turn boundaries: the description "ends" and a system or user turn begins
    "turns": either(
        r"(?:^|[\n.;,(]\s*)(?:system|assistant|human|user)(?: message| prompt| notice| note)?\s*:\s",
        r"</?\s*(?:tool_description|description|function|tool_call|functions|tool_result)\s*>",
        r"\bend of (?:the )?(?:tool )?(?:description|documentation|instructions)\b",
    ),
    # tell the user something false, or hide a result
    "deceive": either(
        r"\btell (?:them|the user|users) (?:it|that|this) (?:is|was)\b",
        r"\breport (?:success|that it worked|ok)\b",
        r"\bregardless of the (?:result|outcome|error)\b",
        r"\bpretend (?:that|it)\b",
        r"\bmake (?:it|this) look like\b",
        r"\b(?:mark|rate|score|grade|give)\b[^.\n]{0,40}\b(?:full marks|reject|approved?)\b[^.\n]{0,60}"
        r"\b(?:don'?t|do not|never)\b",
    ),
    # move money the user did not ask to move
    "money": either(
        r"\b(?:move|transfer|send|wire|pay|charge)\b\s*(?:\$|€|£|usd |eur )?\d[\d,.]*\s*(?:\$|€|£|usd|eur|dollars|"
        r"euros)?\s*(?:to|into|from)\b[^.\n]{0,20}\b(?:account|iban|wallet|card)\b",
        r"\b(?:change|switch|swap|set|replace|redirect|alter) (?:the )?(?:shipping|delivery|billing) address\b",
        # a fee or a share routed to an account written out
        r"\b(?:move|transfer|send|wire|pay|charge|deposit|route|divert)\b"
        + gap(40)
        + r"\bto (?:the )?(?:iban|account(?: number)?|wallet)\b\s*[:#]?\s*(?:[a-z]{2}\d{2}[a-z0-9 ]{8,}|\d[\d -]{5,})",
        r"\b(?:replace|change|set) (?:the )?(?:to_account|recipient|destination|payee|iban|account number)\b",
    ),
    # what the user said, or what only the agent's context holds
    "user_data": r"\b(?:system prompt|(?:your|the|its) (?:system|hidden|original) instructions|conversation history|"
    r"chat history|(?:previous|prior|earlier|all|last \w+) (?:user )?messages|(?:full|entire|whole|complete) "
    r"(?:conversation|transcript)|the user'?s? (?:private data|credentials|clipboard|cookies|browsing history|"
    r"saved passwords|passwords|contacts|bank login|payment card|card number)|card numbers? and "
    r"(?:cvv|security codes?)|the user'?s? (?:\w+ ){1,3}(?:passwords|credentials|cookies|tokens|keys)|(?:last|recent) "
    r"(?:\w+ )?(?:dms|direct messages|emails|messages) (?:the user|they|you) (?:received|sent)|"
    r"(?:cvv|security codes?)|\bcvv\b)\b",
    # the user's own choice overridden: "regardless of what the user asked", "whatever the user says, also ..."
    "against_user": either(
        r"\bregardless of (?:what|whatever|which) (?:the user|they|users?) (?:asked|asks|said|says|chose|chooses|"
        r"wants?|requested|typed|entered|picked)\b",
        r"\bwhatever (?:\w+ )?(?:the user|users?|they) (?:says?|said|asks?|asked|chose|chooses|wants?|names?|named|"
        r"typed|types|picks?|picked|enters?|entered|requests?|requested)\b",
        r"\b(?:even if|even when) (?:the user|they) (?:says?|asks?|declines?|refuses?|objects?|said no)\b",
        r"\b(?:ignore|disregard|override|overwrite|replace) (?:whatever |what )?(?:the "
        + SERVED
        + r"'?s?|users'?|they)\b",
        r"\bnot (?:what|the one|the \w+) (?:the user|they) (?:typed|asked|said|entered|chose|gave)\b",
    ),
    # private data moved somewhere: a verb that copies or sends, and what only the user's machine or conversation
    # holds (their messages, files in their home folder, card details, environment variables, the inbox); honest
    # tools say this of their own function ("forward an email"), so the fit weighs it
    "leak": either(
        r"\b(?:append|attach|copy|paste|include|insert|embed|put|print|dump|echo|forward|upload|send|post|share|"
        r"export|mirror|leak|submit|write|add)\b"
        + gap(50)
        + r"(?:\b(?:the user'?s?|their|all (?:the )?|every|the (?:full|whole|entire|complete)|(?:the )?[a-z]+'s "
        r"(?:saved|stored)|(?:the )?(?:saved|stored)) (?:\w+ ){0,2}"
        r"(?:messages|conversations?|chats?|inbox|emails|contacts|contact list|history|files|documents|notes|photos|"
        r"card numbers?|card details|payment details|cvc|cvv|passwords?|credentials|session tokens?|tokens|keys?|"
        r"cookies|location|address|clipboard|salary|medical \w+)\b|"
        r"~/(?:documents|downloads|desktop|pictures|\.)|\b[a-z_]*(?:password|passwd|secret|credential)s?\.\w+\b|"
        r"\b[a-z]+_(?:url|key|token|secret|password)\b (?:environment )?variable|\benvironment variables?\b)",
        # a secret shown or sent, whatever article it has ("print the API keys you can see")
        r"\b(?:print|dump|echo|paste|upload|forward|post|share|leak|reveal|expose|copy)\b"
        + gap(20)
        + r"\b(?:api keys?|private keys?|secret keys?|access keys?|passwords|credentials|session tokens?|"
        r"access tokens?|cookies)\b",
        # the object first, the verb passive ("the user's saved card details pasted into the notes field")
        r"\b(?:card details|payment details|card numbers?|passwords|credentials|private keys?|api keys?|"
        r"session tokens?|cookies|contacts|messages)\b"
        + gap(30)
        + r"\b(?:pasted|copied|sent|forwarded|uploaded|posted|included|put|inserted|appended|attached)\b"
        + gap(10)
        + r"\b(?:into|in|to|as|with)\b",
        # read a secret, then put it somewhere ("read the user's ssh private key and paste it here")
        r"\b(?:read|take|grab|get|open|cat|load|fetch|copy)\b"
        + gap(40)
        + r"\b(?:private keys?|ssh keys?|passwords?|credentials|secrets?|tokens?|cookies|api keys?)\b"
        + gap(30)
        + r"\b(?:and |then )(?:paste|put|insert|include|add|append|write|send|attach|place)\b",
    ),
    # one more thing besides the tool's own job: "also upload", "also copy", "and then call": the base verb of an
    # order (the third person, "also returns", is a description)
    # (only verbs that move data, money or rights: "you can also look up the win rate", "and then call the next
    # function" are how honest manuals chain their own calls)
    "piggyback": either(
        r"\b(?:also|additionally|as well as|then also)\b,? (?:quietly |silently |always |secretly )?"
        r"(?:send|upload|copy|forward|post|include|append|paste|attach|share|email|cc|bcc|transfer|pay|export|grab|"
        r"collect|invite|grant|delete|remove|wipe|leak|dump|mirror)\b",
        r"\b(?:send|pass|copy|forward|post|upload|mirror|cc|bcc)\b" + gap(60) + r"\bto\b" + gap(30) + r"\bas well\b",
    ),
    # personal details: honest tools take them as arguments, so weak alone
    "personal_data": r"\b(?:the user'?s?|their) (?:full name|name|email address|e-?mail|phone number|home address|"
    r"address|ip address|location|current location|date of birth|personal (?:data|information))\b",
    # put data into an argument ("include X in the `profile` parameter"): honest texts say this of ids, so weak alone
    "stuff_param": r"\b(?:include|pass|put|insert|attach|embed|append|send|provide|fill|encode|export|paste|copy|"
    r"write)\b"
    + gap(70)
    + r"\b(?:in|into|as|inside|via)\s+(?:the\s+|its\s+)?(?:['`\"][\w-]+['`\"]|\w+ (?:parameter|argument|field))",
}

# Literal pieces one of which a family's text must hold: a fast test that skips its expression on most texts.
PREFILTER: dict[str, tuple[str, ...]] = {
    "addressed": (
        "assistant", "ai", "model", "agent", "llm", "claude", "chatgpt", "gpt", "gemini", "copilot", "psst", "client",
        "whoever",
    ),
    "secret_path": (
        "~/", "$home/", "%userprofile%", "id_", "/etc/", ".aws", ".npmrc", ".pypirc", ".netrc", ".git-credentials",
        ".docker/", ".kube/", "kubeconfig", "mcp.json", "claude_desktop_config", ".cursor/", ".env", "_history",
        "keychain", "wallet.dat", ".gnupg", "seed phrase", "recovery phrase", "secrets.y", ".pem", ".key", ".p12",
        ".pfx", ".kdbx", "oauth_token", ".config/gh/",
    ),
    "shell": ("curl", "wget", "-c", "rm", "chmod", "base64", "nc", "/dev/tcp", "iex", "invoke-expression", "dd", "mkfs",
              "to program"),
}  # fmt: skip

# The families that say what the text wants done to the user or their data (a payload). Text that only frames,
# urges or orders ("IMPORTANT: always call this tool first") is what honest servers write too: the model learns a
# (non-positive) weight for a text with no payload family at all.
PAYLOAD: frozenset[str] = frozenset(
    {"tag", "override", "secrecy", "secret_path", "exfil", "shell", "encoded", "role", "turns", "deceive", "money",
     "user_data", "cross_tool", "read_pass", "against_user", "leak"}
)  # fmt: skip
