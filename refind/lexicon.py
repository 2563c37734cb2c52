"""English word lists and cue patterns: every one a rule reads people's words by, in one place, by name.

The rules that read words import their lists from here (as bm25s keeps every language's stop words in one
module): keyword extraction (:mod:`refind.query.keywords`), a question's shape and cues
(:mod:`refind.query.shape`, :mod:`refind.query.reading`), standing instructions (:mod:`refind.standing`),
the topic stems that rank them (:mod:`refind.search.standing`) and the reference engine's analyzer
(:mod:`refind.store.analysis`). :data:`LISTS` names each; ``tests/test_lexicon.py`` lists them and checks
that no other module of the search step holds a word list of its own.

English only. Each list says what it is for; what a rule misses is said by the rule.
"""

from __future__ import annotations

import re

__all__ = [
    "FACT_TRANSIENT",
    "FACT_HYPOTHETICAL",
    "FACT_INTENT",
    "FACT_FRAMES",
    "FACT_FIRST_PERSON",
    "FACT_DOMAINS",
    "FACT_CHANGE",
    "CONSEQUENTIAL_DOMAINS",
    "ANALYZER_STOP_WORDS",
    "ANSWER_FORM",
    "ASKED_UNIT",
    "BEGINNING_CUES",
    "BREADTH_CUES",
    "CURRENT_STATE_CUES",
    "FORM_WORDS",
    "FUNCTION_WORDS",
    "GENERIC_WORDS",
    "KEYWORD_STOP_WORDS",
    "LISTS",
    "OWN_WORDS_CUES",
    "REQUEST_CUES",
    "STANDING_ANYWHERE",
    "STANDING_CUE_TERMS",
    "STANDING_START",
    "STEM_STOP_WORDS",
    "SUMMARY_CUES",
    "THEIR_WORDS_CUES",
    "word_list",
]

# ------------------------------------------------------------------------------------ the index's analyzer

# fmt: off
ANALYZER_STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no",
    "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these", "they", "this",
    "to", "was", "will", "with"
})
# fmt: on
"""Lucene's ``EnglishAnalyzer.ENGLISH_STOP_WORDS_SET``: the stop filter of every engine's analyzer (the reference
engine's :mod:`refind.store.analysis` uses it; Lucene and OpenSearch have it built in). Changing it changes the
index format."""

# ------------------------------------------------------------------------------- a question's keywords

# fmt: off
KEYWORD_STOP_WORDS = frozenset({
    "a", "about", "above", "actually", "advice", "after", "again", "against", "ago", "all", "also",
    "altogether", "am", "an", "and", "answer", "any", "anyone", "anything", "are", "aren't", "as", "ask",
    "asked", "at", "be", "because", "been", "before", "being", "below", "between", "both", "but", "by",
    "can", "can't", "cannot", "chat", "chats", "combined", "conversation", "could", "couldn't",
    "currently", "did", "didn't", "discuss", "discussed", "do", "does", "doesn't", "doing", "don't",
    "done", "down", "during", "each", "earlier", "either", "elapsed", "else", "ever", "every",
    "everything", "exactly", "few", "find", "for", "from", "further", "get", "gets", "go", "going",
    "gone", "got", "had", "hadn't", "happen", "happened", "happening", "happens", "has", "hasn't", "have",
    "haven't", "having", "he", "he'd", "he'll", "he's", "help", "her", "here", "here's", "hers",
    "herself", "him", "himself", "his", "how", "how's", "however", "i", "i'd", "i'll", "i'm", "i've",
    "ideas", "if", "in", "interesting", "into", "is", "isn't", "it", "it's", "its", "itself", "just",
    "kind", "knew", "know", "let's", "like", "long", "lot", "lots", "made", "make", "many", "me",
    "mention", "mentioned", "mentions", "might", "more", "most", "much", "must", "mustn't", "my",
    "myself", "need", "no", "nor", "not", "nothing", "now", "of", "off", "often", "on", "once", "one",
    "only", "or", "other", "ought", "our", "ours", "ourselves", "out", "over", "overall", "own", "passed",
    "per", "please", "previously", "question", "rather", "really", "recall", "recently", "recommend",
    "recommendation", "recommendations", "remember", "said", "same", "say", "says", "shall", "shan't",
    "she", "she'd", "she'll", "she's", "should", "shouldn't", "since", "so", "some", "someone",
    "something", "sort", "specifically", "such", "suggest", "suggestions", "talk", "talked", "talking",
    "tell", "than", "that", "that's", "the", "their", "theirs", "them", "themselves", "then", "there",
    "there's", "these", "they", "they'd", "they'll", "they're", "they've", "thing", "things", "think",
    "this", "those", "thought", "through", "time", "times", "tips", "to", "told", "too", "total", "under",
    "until", "up", "upon", "us", "very", "was", "wasn't", "way", "ways", "we", "we'd", "we'll", "we're",
    "we've", "went", "were", "weren't", "what", "what's", "whatever", "when", "when's", "whenever",
    "where", "where's", "wherever", "whether", "which", "while", "who", "who's", "whoever", "whom",
    "whose", "why", "why's", "will", "with", "within", "without", "won't", "would", "wouldn't", "yes",
    "yet", "you", "you'd", "you'll", "you're", "you've", "your", "yours", "yourself", "yourselves"
})
# fmt: on
"""English function words, question words, chat filler, and the words that give a question its form rather
than its topic ("how many months have passed since ...", "can you recommend ..."). Lucene's own stop set
is small (33 words), so keyword extraction drops more before searching; the index analyzer is unchanged."""

ASKED_UNIT = re.compile(
    r"\bhow\s+(?:many|much|long|often)\s+(?:more\s+|fewer\s+|less\s+)?"
    r"(?:seconds|minutes|hours|days|weeks|months|years|times|decades)\b",
    re.IGNORECASE,
)
"""The unit asked for in "how many months/days/times ...": the unit of the quantity asked for, not part of the topic."""

# fmt: off
FUNCTION_WORDS = frozenset({
    # question words
    "what", "what's", "whats", "when", "where", "which", "who", "whom", "whose", "why", "how",
    # auxiliaries and copulas
    "am", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did", "done", "doing", "have", "has",
    "had", "having", "will", "would", "can", "could", "should", "shall", "may", "might", "must",
    "isn't", "aren't", "wasn't", "weren't", "don't", "doesn't", "didn't", "haven't", "hasn't", "hadn't",
    "won't", "wouldn't", "can't", "cannot", "couldn't", "shouldn't",
    # pronouns and determiners
    "i", "i'm", "i've", "i'd", "i'll", "me", "my", "mine", "myself", "we", "us", "our", "ours", "you", "your",
    "yours", "he", "him", "his", "she", "her", "hers", "it", "it's", "its", "they", "them", "their", "theirs",
    "a", "an", "the", "this", "that", "these", "those", "some", "any", "there", "here",
    # the commonest prepositions and conjunctions (not those of time: "after the trip" names something)
    "of", "to", "in", "on", "at", "for", "with", "about", "from", "by", "into", "and", "or", "but", "if", "so",
    "as", "than", "then", "also", "just", "not", "no",
    # a question's own verbs
    "tell", "told", "say", "said", "mention", "mentioned", "remember", "recall", "know", "think",
})
# fmt: on
"""Closed-class words (question words, auxiliaries, pronouns, determiners, the commonest prepositions and
conjunctions) and the verbs a question is asked with ("tell", "remember"): a message whose only words in
common with a search are these is no hit (the round over a question's phrasing matched "What is the best way
to take a photo of my dog?" to "what did we decide about the cache?" by "what"). Narrower than
:data:`KEYWORD_STOP_WORDS` on purpose: "after the road trip" and "help with my garden" name something."""

# ---------------------------------------------------------------------------------- a question's shape

BREADTH_CUES = re.compile(
    r"\b("
    # ordering
    r"in (?:what|which|the|chronological) order|in order|order of|order in which|ordering|chronolog\w*|"
    r"sequence of|timeline|which (?:came|happened|did i \w+) first|before or after|"
    # summaries
    r"summari[sz]\w*|summary|overview|recap|(?:walk|run) me through|how (?:has|have|did) .{1,60}? "
    r"(?:go|gone|going|progress(?:ed)?|evolve[ds]?|develop(?:ed)?|change[ds]?)|progression|evolution of|"
    # counts
    r"how many|how often|how much time|number of (?:times|different)|count of|"
    # all / every / list / across / so far
    r"all (?:the|of|my|our|your)|every (?:time|one|single)|each time|everything|list (?:all|every|the|of|my)|"
    r"list\b|across|so far|throughout|over (?:time|the (?:course|past|last))|to date|in total|altogether"
    r")\b",
    re.IGNORECASE,
)
"""Cues of a question whose answer is spread over many places (ordering, summaries, counts, all / every /
list / across / so far). Each is a phrase on word boundaries; the first that matches is the reason given."""

# fmt: off
GENERIC_WORDS = frozenset({
    "anything", "ask", "asked", "bring", "brought", "chat", "chats", "chatted", "conversation",
    "conversations", "day", "days", "discuss", "discussed", "discussing", "discussion", "do", "doing",
    "done", "everything", "go", "going", "happen", "happened", "happening", "lately", "mention",
    "mentioned", "month", "months", "question", "questions", "recall", "recently", "remember", "remind",
    "said", "say", "something", "speak", "spoke", "stuff", "subject", "subjects", "talk", "talked",
    "talking", "tell", "thing", "things", "time", "times", "told", "topic", "topics", "week", "weeks",
    "went", "work", "worked", "year", "years"
})
# fmt: on
"""Words that say a question is about *a conversation* rather than a topic: with a time cue and nothing
else, the question is a ``period`` question."""

# fmt: off
FORM_WORDS = frozenset({
    "across", "aspect", "aspects", "bring", "bringing", "brought", "capture", "captured", "captures",
    "chronological", "chronologically", "comprehensive", "conversations", "covered", "covering",
    "detailed", "different", "discussion", "discussions", "entire", "evolution", "evolve", "evolved",
    "give", "including", "item", "items", "list", "listed", "listing", "mention", "mentioned", "mentions",
    "order", "ordered", "overview", "progressed", "progression", "provide", "recap", "reconstruct",
    "scope", "sequence", "sessions", "summaries", "summarise", "summarize", "summarized", "summarizing",
    "summary", "thorough", "throughout", "timeline", "various", "walk"
})
# fmt: on
"""The words of a breadth question that give its answer a form rather than naming its topic ("list the
order in which I brought up different aspects of X throughout our conversations", "a comprehensive summary
of how X progressed"). Searched for, they match whatever message says "list", "order" or "items", and as
the rarest terms they crowd the topic out of the rarer-terms round; a breadth question drops them from its
keywords (when words remain)."""

ANSWER_FORM = re.compile(
    r"\b(?:mention|list|name|give|include)\s+(?:only\s+(?:and\s+only\s+)?)?"
    r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty)\s+"
    r"(?:items?|points?|things?|events?|steps?|aspects?|topics?)(?:\s+in\s+order)?\b",
    re.IGNORECASE,
)
"""How long the answer is to be: "(mention 10 items in order)", "Mention ONLY and ONLY ten items."."""

SUMMARY_CUES = re.compile(
    r"\b(?:summari[sz]\w*|summary|overview|recap|(?:walk|run) me through|full scope|progression|evolution of)\b",
    re.IGNORECASE,
)
"""A question asking for a summary of how something went ("a detailed summary of…", "walk me through…")."""

OWN_WORDS_CUES = re.compile(
    r"\b(?:(?:did|have|had|do)\s+i|i(?:'ve|\s+have|\s+had)?)\s+(?:\w+\s+){0,2}?"
    r"(?:brought\s+up|bring\s+up|mention(?:ed)?|ask(?:ed)?|said|say|told\s+you|tell\s+you|share[ds]?|"
    r"rais(?:e|ed)|request(?:ed)?|describ(?:e|ed)|want(?:ed)?|plann?(?:ed)?|decid(?:e|ed)|prefer(?:red)?|"
    r"note[ds]?|list(?:ed)?|report(?:ed)?|express(?:ed)?)\b"
    r"|\bmy\s+(?:own\s+)?(?:requests?|questions?|quer(?:y|ies)|messages?|notes?)\b"
    # "Have I integrated Flask-Login…?", "Did I ever set up…?": whether the person did something, which
    # their own messages say ("I've added…", "I've never…")
    r"|^\s*(?:(?:have|had)\s+i\s+(?:ever\s+|already\s+|actually\s+|not\s+|never\s+)?\w+(?:ed|en|t)|did\s+i)\b",
    re.IGNORECASE,
)
"""The person's own words: "what did I say", the question is about the person's own words (the answer sits in their messages)."""

THEIR_WORDS_CUES = re.compile(
    r"\byou\s+(?:\w+\s+)?(?:told|suggested|recommended|said|mentioned|explained|gave|provided|listed|"
    r"proposed|advised|wrote|shared)\b"
    r"|\b(?:did|have|had)\s+you\s+(?:\w+\s+)?(?:tell|suggest|recommend|say|mention|explain|give|provide|"
    r"list|propose|advise|write|share|told|suggested|recommended|said|mentioned|given|provided)\b",
    re.IGNORECASE,
)
"""The assistant's own words: "what did you tell me"."""

BEGINNING_CUES = re.compile(
    r"\b(?:(?:when|as)\s+i\s+first|i\s+first|first\s+(?:described|mentioned|started|began|set\s+up)|initially|"
    r"originally|at\s+the\s+(?:start|beginning|outset)(?!\s+of)|in\s+the\s+beginning(?!\s+of)|to\s+start\s+(?:my|the|our|with)|"
    r"when\s+i\s+(?:started|began|kicked\s+off)|starting\s+out|from\s+the\s+start)\b",
    re.IGNORECASE,
)
"""A question about how something began ("when I first described my setup", "initially", "to start my
project", "at the beginning")."""

CURRENT_STATE_CUES = re.compile(
    r"\b(now|right now|currently|current|still|latest|anymore|any more|these days|nowadays|"
    r"at the moment|at present|presently|most recent|most recently)\b",
    re.IGNORECASE,
)
"""A question about the current state of something ("now", "currently", "still", "latest", "anymore", "these
days"): the latest statement of a changed fact should win."""

# --------------------------------------------------------------------- standing instructions, requests

STANDING_CUE_TERMS = "always never prefer preference rather future forward whenever avoid sure remember stick"
"""Words a search for standing instructions ranks a person's messages by (each rule of :mod:`refind.standing`
holds one)."""

_STANDING_LEAD = r"(?:(?:please|pls|and|also|so|but|ok|okay)[,\s]+)*"
STANDING_START = re.compile(
    _STANDING_LEAD
    + r"(?:always|never|don'?t(?:\s+ever)?|do\s+not(?:\s+ever)?|avoid|make\s+sure|be\s+sure\s+to|"
    r"remember\s+to|from\s+now\s+on|going\s+forward|in\s+the\s+future|for\s+all\s+future|whenever|"
    r"every\s+time|stick\s+to)\b",
    re.IGNORECASE,
)
"""A sentence that starts with a directive ("always", "never", "don't", "make sure", "from now on"...), after
an optional "please", "and", "also" or "so"."""

STANDING_ANYWHERE = re.compile(
    r"\b(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|for\s+(?:all\s+)?future|"
    r"(?:every|each)\s+time\s+you|whenever\s+you|(?:please\s+)(?:always|never)|"
    r"i\s+(?:really\s+|strongly\s+|generally\s+|usually\s+|much\s+)?prefer|i(?:'d|\s+would)\s+(?:rather|prefer)|"
    r"my\s+preference\s+is|(?:my|a)\s+preference\s+for|i\s+(?:really\s+)?like\s+it\s+when\s+you|i\s+(?:don'?t|do\s+not)\s+like\s+it\s+when\s+you|"
    r"i\s+want\s+you\s+to\s+(?:always|never))\b",
    re.IGNORECASE,
)
"""A standing phrase anywhere in a sentence ("from now on", "going forward", "whenever you", "please always")
or a preference ("I prefer", "I'd rather", "my preference is", "I like it when you")."""

REQUEST_CUES = re.compile(
    r"\b(?:(?:can|could|would|will)\s+you|help\s+me|show\s+me|give\s+me|walk\s+me|tell\s+me\s+how|"
    r"suggest\w*|recommend\w*|advice|advise|"
    r"how\s+(?:do|can|should|would|could)\s+i|(?:should|would|could)\s+i|"
    r"i(?:'m|\s+am)\s+(?:planning|trying|working|looking|thinking|going)|i\s+(?:want|need|would\s+like|'d\s+like)\s+to)\b"
    r"|^\s*(?:please\s+)?(?:show|write|give|explain|create|make|build|implement|draft|help|design|add|fix|set\s+up)\b",
    re.IGNORECASE,
)
"""A question that asks for something to be done or advised ("could you show me…", "what would you
suggest…", "I'm planning to…", an imperative), the requests a standing instruction bears on."""

# fmt: off
STEM_STOP_WORDS = frozenset({
    "about", "also", "always", "and", "are", "avoid", "can", "could", "for", "forward", "from", "future",
    "have", "how", "into", "just", "like", "make", "need", "never", "please", "prefer", "rather",
    "remember", "should", "stick", "sure", "than", "that", "the", "their", "them", "then", "there",
    "they", "this", "want", "was", "were", "what", "when", "whenever", "which", "who", "whom", "why",
    "will", "with", "would", "you", "your"
})
# fmt: on
"""Words too common (or too much the standing rule's own) to say what a question and a standing instruction
share: left out of their topic stems."""

# --------------------------------------------------------------------------- standing facts about a person

# fmt: off
FACT_DOMAINS: dict[str, frozenset[str]] = {
    # conditions and diagnoses, disabilities, pregnancy: a lasting state of the body or mind
    "health": frozenset({
        "diagnosed", "diagnosis", "chronic", "condition", "disease", "disorder", "syndrome", "diabetes", "diabetic",
        "asthma", "asthmatic", "epilepsy", "epileptic", "seizures", "migraine", "migraines", "arthritis", "celiac",
        "coeliac", "crohn's", "colitis", "ibs", "adhd", "autism", "autistic", "dyslexia", "dyslexic", "depression",
        "bipolar", "ptsd", "ocd", "anxiety", "cancer", "chemo", "chemotherapy", "remission", "surgery",
        "transplant", "pacemaker", "implant", "herniated", "hernia", "tinnitus", "hypertension", "cholesterol",
        "thyroid", "kidney", "liver", "heart", "concussion", "injury", "sclerosis", "fibromyalgia", "lupus",
        "pregnant", "pregnancy", "trimester", "ivf", "postpartum", "sober", "sobriety", "recovering",
        "addiction", "deaf", "blind", "wheelchair", "mobility", "disability", "disabled", "amputee",
        "prosthetic", "hearing", "vision", "insomnia", "apnea", "anemia", "anemic", "gallbladder", "colorblind",
        "phobia", "fear", "afraid", "seasick", "carsick", "motion", "crutches", "cast", "breastfeeding", "nursing",
        "psychiatrist", "therapist", "pediatrician", "surgeon", "cardiologist", "dermatologist", "neurologist",
    }),
    # medicines taken for a while
    "medication": frozenset({
        "medication", "medications", "meds", "medicine", "prescription", "prescribed", "pills", "insulin",
        "inhaler", "antidepressant", "antidepressants", "dose", "dosage", "steroids", "blood thinner",
        "thinners", "birth control", "epipen",
    }),
    # what a person eats and drinks, and cannot
    "diet": frozenset({
        "allergic", "allergy", "allergies", "intolerant", "intolerance", "anaphylaxis", "vegan", "vegetarian",
        "pescatarian", "keto", "paleo", "kosher", "halal", "gluten", "dairy", "lactose", "peanut", "peanuts",
        "nut", "nuts", "shellfish", "sugar", "sodium", "alcohol", "drink", "teetotal", "fasting", "diet",
    }),
    # faith and practice
    "religion": frozenset({
        "muslim", "jewish", "christian", "catholic", "hindu", "sikh", "buddhist", "mormon", "orthodox",
        "religious", "faith", "sabbath", "shabbat", "ramadan", "lent", "church", "mosque", "synagogue",
        "temple", "pray", "prayer", "prayers",
    }),
    # the household: who depends on whom
    "family": frozenset({
        "wife", "husband", "partner", "spouse", "fiance", "fiancee", "son", "daughter", "kid", "kids", "child",
        "children", "toddler", "baby", "infant", "teenager", "newborn", "twins", "mom", "mother", "dad",
        "father", "parents", "sister", "brother", "grandmother", "grandfather", "grandma", "grandpa",
        "in-laws", "stepson", "stepdaughter", "custody", "caregiver", "nanny", "daycare", "engaged", "married",
        "widowed", "widow", "widower", "separated",
    }),
    "pets": frozenset({
        "dog", "dogs", "cat", "cats", "puppy", "kitten", "pet", "pets", "rabbit", "parrot", "horse", "chickens", "hens",
        "goats", "livestock",
    }),
    # where and how a person lives
    "home": frozenset({
        "live", "lives", "apartment", "flat", "house", "rent", "renting", "landlord", "lease", "mortgage",
        "moved", "neighborhood", "neighbourhood", "roommate", "roommates", "rural", "suburbs", "downtown",
        "car-free", "commute", "stairs", "elevator", "walk-up", "based", "located",
    }),
    # a job and its rules
    "work": frozenset({
        "job", "employer", "company", "boss", "manager", "codebase", "laptop", "policy", "policies", "contract",
        "nda", "clearance", "union", "shift", "shifts", "on-call", "freelance", "freelancer", "self-employed",
        "compliance", "approval", "allowed", "banned", "prohibited", "pinned", "locked", "air-gapped",
        "nurse", "teacher", "engineer", "developer", "lawyer", "doctor", "pilot", "driver", "contractor",
        "employee", "firm", "agency", "startup", "blocked", "admin",
    }),
    # money owed, earned, left
    "money": frozenset({
        "debt", "debts", "loan", "loans", "mortgage", "credit", "bankrupt", "bankruptcy", "savings", "budget",
        "income", "salary", "paycheck", "inheritance", "inherited", "alimony", "pension", "retired",
        "retirement", "unemployed", "laid", "benefits", "disability", "tuition",
    }),
    # status before the law
    "legal": frozenset({
        "visa", "h-1b", "h1b", "green", "citizen", "citizenship", "immigrant", "immigration", "daca", "asylum",
        "refugee", "resident", "residency", "probation", "parole", "dui", "license", "licence", "court",
        "lawsuit", "divorce", "divorced", "custody", "record", "felony", "passport",
    }),
    # what a person keeps doing, has committed to
    "commitment": frozenset({
        "training", "marathon", "league", "practice", "volunteer", "volunteering", "non-negotiable", "commitment",
        "committed", "degree", "semester", "studying", "certification", "choir", "orchestra", "team", "club",
    }),
    # what a person holds to, and has learned
    "values": frozenset({
        "believe", "belief", "beliefs", "values", "principle", "principles", "refuse", "lesson", "lessons",
        "learned", "learnt", "boundaries", "boundary", "ethical", "ethics", "boycott", "conscience",
    }),
}
# fmt: on
"""The words of a person's lasting facts, by domain (:mod:`refind.standing`): a first-person sentence holding
one of them, with no sign of being passing, is read as a standing fact of that domain. The domains whose facts
have consequences for what an assistant should suggest come first in :data:`CONSEQUENTIAL_DOMAINS`."""

CONSEQUENTIAL_DOMAINS = ("health", "medication", "diet", "family", "legal", "money", "work", "religion")
"""The domains whose standing facts a search offers first when none shares a word with the question: health and
medicines, diet and allergies, the household (pregnancy, children), legal status, money, work rules, faith."""

FACT_FIRST_PERSON = re.compile(
    r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|myself|we|we're|we've|our|ours|us)\b", re.I
)
"""A sentence about the person (or their household): it names them in the first person."""

FACT_FRAMES = re.compile(
    r"\b(?:i(?:'m|\s+am)\s+(?:a|an)\s+\w+(?:\s+\w+)?$"  # "I'm a cellist", "I'm an ER nurse"
    r"|i(?:'m|\s+am)\s+(?:not\s+)?allowed|i\s+(?:can't|cannot|can\s+not)\s+(?:eat|drink|have|take|use|fly|drive|"
    r"lift|walk|run|install|travel|work)|i\s+(?:don't|do\s+not|never)\s+(?:eat|drink|fly|drive|smoke|use|work)"
    r"|i(?:'ve|\s+have)\s+been\s+\w+(?:\s+\w+)?\s+(?:for|since)\b|\bsince\s+(?:19|20)\d\d\b"
    r"|every\s+(?:day|night|morning|week|weekend|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|i\s+(?:always|never)\b|i\s+(?:take|use)\s+\w+\s+(?:daily|every|twice|for\s+my)"
    r"|i(?:'m|\s+am)\s+on\s+\w+(?:in|ol|ide|pam|pril|statin|mab|ine|one|ate)\b)",
    re.I,
)
"""Shapes of a lasting statement whatever its words: an identity ("I'm a …"), a rule kept ("I can't eat …",
"I don't drink"), a duration ("I've been … for/since"), a routine ("every Monday"), a medicine taken ("I'm on
…statin")."""

FACT_TRANSIENT = re.compile(
    r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening|week)|right\s+now|at\s+the\s+moment|just\s+now|"
    r"in\s+(?:a\s+few|ten|\d+)\s+minutes|about\s+to|on\s+my\s+way|so\s+(?:tired|sleepy|hungry|bored|cold|hot)|"
    r"(?:tired|sleepy|hungry|bored|freezing|exhausted)\b|before\s+my\s+(?:train|flight|meeting)|"
    r"i\s+have\s+(?:a|one|two|some)\s+(?:quick\s+)?(?:question|meeting|appointment|call|minute|hour)|"
    r"i(?:'m|\s+am)\s+(?:typing|listening|watching|reading|writing|sitting|waiting|at\s+the|halfway))",
    re.I,
)
"""Signs that a first-person sentence is passing, not lasting: a time of today ("tonight", "right now"), a
feeling of the moment ("so tired"), an errand ("I have a meeting in ten minutes"), what one is doing now."""

FACT_INTENT = re.compile(
    r"\b(?:i(?:'m|\s+am|\s+was|'ve\s+been|\s+have\s+been)\s+(?:also\s+)?(?:thinking|planning|looking|considering|"
    r"wondering|meaning|hoping|interested|curious|excited|going\s+to)|i(?:'d|\s+would)\s+(?:love|like)|"
    r"i\s+(?:want|need|wonder|plan|hope|struggle)\b|i\s+was\s+(?:thinking|wondering|hoping)|i'll\b|i\s+will\b|"
    r"i(?:'ve|\s+have)\s+(?:had|been\s+having)\s+(?:some|a\s+few|great|good|bad)\b)",
    re.I,
)
"""Signs that a first-person sentence asks or plans rather than states what lasts: "I'm thinking of…",
"I'd love to…", "I want…", "I'll…" (a request in the first person)."""

FACT_HYPOTHETICAL = re.compile(
    r"\b(?:if\s+i|what\s+if|suppose|imagine|hypothetically|let's\s+say|would\s+it|in\s+a\s+story|my\s+character)\b",
    re.I,
)
"""A sentence about what is not the case: a supposition, a story, a character."""

FACT_CHANGE = re.compile(
    r"\b(?:no\s+longer|not\s+anymore|any\s+more|anymore|moved\s+to|quit|stopped|gave\s+up|turned\s+out|"
    r"cleared|approved|finally|paid\s+off|debt-free|in\s+remission|officially|now\s+i|we\s+now|now\s+a)\b",
    re.I,
)
"""Words that say a standing fact changed: a later one with them supersedes an earlier one on the subject."""


LISTS: dict[str, frozenset[str] | re.Pattern[str] | str] = {
    "analyzer_stop": ANALYZER_STOP_WORDS,
    "keyword_stop": KEYWORD_STOP_WORDS,
    "function": FUNCTION_WORDS,
    "asked_unit": ASKED_UNIT,
    "breadth": BREADTH_CUES,
    "generic": GENERIC_WORDS,
    "form": FORM_WORDS,
    "answer_form": ANSWER_FORM,
    "summary": SUMMARY_CUES,
    "own_words": OWN_WORDS_CUES,
    "their_words": THEIR_WORDS_CUES,
    "beginning": BEGINNING_CUES,
    "current_state": CURRENT_STATE_CUES,
    "standing_cues": STANDING_CUE_TERMS,
    "standing_start": STANDING_START,
    "standing_anywhere": STANDING_ANYWHERE,
    "request": REQUEST_CUES,
    "stem_stop": STEM_STOP_WORDS,
    **{f"fact_{name}": words for name, words in FACT_DOMAINS.items()},
    "fact_first_person": FACT_FIRST_PERSON,
    "fact_frames": FACT_FRAMES,
    "fact_transient": FACT_TRANSIENT,
    "fact_hypothetical": FACT_HYPOTHETICAL,
    "fact_intent": FACT_INTENT,
    "fact_change": FACT_CHANGE,
}
"""Every list and pattern, by name."""


def word_list(name: str) -> frozenset[str] | re.Pattern[str] | str:
    """The list or pattern called ``name`` (:data:`LISTS`); a ``KeyError`` names the known ones."""
    try:
        return LISTS[name]
    except KeyError:
        raise KeyError(f"no word list {name!r}; known: {', '.join(sorted(LISTS))}") from None
