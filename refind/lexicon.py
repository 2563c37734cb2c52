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
    "FACT_MOMENT",
    "FACT_STATE_DOMAINS",
    "FACT_QUESTION_START",
    "FACT_HYPOTHETICAL",
    "FACT_INTENT",
    "FACT_REQUEST_OPENING",
    "FACT_STATEMENT",
    "FACT_FRAMES",
    "FACT_FRAME_GATES",
    "FACT_GATE_PHRASES",
    "FACT_GATE_WORDS",
    "FACT_FIRST_PERSON",
    "FACT_DOMAINS",
    "FACT_OWNED",
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
    "STANDING_GATE",
    "STANDING_GATE_PHRASES",
    "STANDING_LEAD_WORDS",
    "STANDING_START_GATE",
    "STANDING_START_WORDS",
    "STANDING_PREFERENCE",
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

# fmt: off
STANDING_GATE = frozenset({
    "forward", "future", "whenever", "always", "never", "prefer", "preferred", "rather", "preference",
})
STANDING_GATE_PHRASES = frozenset({"from now on", "time you", "like it when"})
STANDING_START_WORDS = frozenset({
    "always", "never", "don't", "dont", "do", "avoid", "make", "be", "remember", "from", "going", "in", "for",
    "whenever", "every", "stick",
})
STANDING_LEAD_WORDS = frozenset({"please", "pls", "and", "also", "so", "but", "ok", "okay"})
STANDING_START_GATE = frozenset({
    "always", "never", "don't", "dont", "not", "avoid", "sure", "remember", "now", "forward", "future",
    "whenever", "time", "stick",
})
# fmt: on
"""The rule's gates (its cost at write time): every sentence :data:`STANDING_ANYWHERE` matches holds a word of
``STANDING_GATE`` or one of ``STANDING_GATE_PHRASES``; every sentence :data:`STANDING_START` matches begins with a word of ``STANDING_START_WORDS``
after any of ``STANDING_LEAD_WORDS``, and holds a word of ``STANDING_START_GATE`` (the directive's own word:
"sure" of "make sure", "future" of "in the future"). A sentence with none is not matched against the
patterns, and a message with none is not split into sentences."""

STANDING_PREFERENCE = re.compile(
    r"\b(?:i\s+(?:really\s+|strongly\s+|generally\s+|usually\s+|much\s+)?prefer|i(?:'d|\s+would)\s+(?:rather|prefer)|"
    r"my\s+preference|(?:my|a)\s+preference\s+for|i\s+(?:really\s+)?like\s+it\s+when\s+you|"
    r"i\s+(?:don'?t|do\s+not)\s+like\s+it\s+when\s+you)\b",
    re.IGNORECASE,
)
"""Of the standing sentences, those that state a preference rather than give an instruction ("I prefer", "I'd
rather", "my preference is", "I like it when you"): their kind is ``preference``."""

REQUEST_CUES = re.compile(
    r"\b(?:(?:can|could|would|will)\s+you|help\s+me|show\s+me|give\s+me|walk\s+me|tell\s+me\s+how|"
    r"suggest\w*|recommend\w*|advice|advise|"
    r"how\s+(?:do|can|should|would|could)\s+(?:i|we)|(?:should|would|could|can)\s+(?:i|we)|"
    r"(?:i|we)(?:'m|'re|\s+am|\s+are)\s+(?:planning|trying|working|looking|thinking|going)|"
    r"(?:i|we)\s+(?:want|need|would\s+like|'d\s+like)\s+to|"
    r"what\s+do\s+(?:i|we)\s+need|any\s+(?:ideas|tips|suggestions|thoughts|pointers)|anything\s+(?:i|we)\s+should|"
    r"is\s+it\s+(?:ok|okay|safe|fine|wise|smart|a\s+good\s+idea)|doable|feasible|worth\s+(?:it|the|a)|"
    r"(?:what|where|which)(?:'s|\s+is|\s+are|\s+would\s+be)\s+(?:a\s+|an\s+|the\s+|some\s+)?"
    r"(?:good|best|great|nice|fun|decent|quickest|fastest|cheapest|easiest|safest|ideal)\b)\b"
    r"|(?:^|[.!?]\s+)(?:please\s+)?(?:show|write|give|explain|create|make|build|implement|draft|help|design|add|"
    r"fix|set\s+up|plan|find|list|suggest|recommend|put\s+together|pick|book)\b",
    re.IGNORECASE,
)
"""A question that asks for something to be done or advised ("could you show me…", "what would you
suggest…", "I'm planning to…", "any tips?", "what's a good…", "is it okay to…", "is … doable / feasible / worth
it", an imperative at the start of
a sentence: "We're off to Rio. Plan me a day."), the requests a standing instruction and a person's lasting
facts bear on; not a question about what happened ("when did…", "what did I say about…"). It misses advice
asked as a plain question about the world ("which dishes are must-tries in New Orleans?")."""

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
    # conditions and diagnoses, disabilities, pregnancy, recovery: a lasting state of the body or mind
    "health": frozenset({
        "diagnosed", "chronic", "medical condition", "heart condition", "heart attack", "disease",
        "disorder", "syndrome", "dementia", "alzheimer's", "parkinson's", "diabetes", "diabetic", "asthma", "asthmatic", "epilepsy", "epileptic",
        "seizures", "migraine", "migraines", "arthritis", "celiac", "coeliac", "crohn's", "colitis", "ibs",
        "adhd", "autism", "autistic", "dyslexia", "dyslexic", "depression", "bipolar", "ptsd", "ocd",
        "anxiety disorder", "panic attacks", "cancer", "chemo", "chemotherapy", "remission", "surgery",
        "transplant", "pacemaker", "herniated", "hernia", "tinnitus", "hypertension", "blood pressure",
        "cholesterol", "thyroid", "kidney disease", "kidney function", "kidneys", "liver disease",
        "concussion", "injury", "sclerosis", "fibromyalgia", "lupus", "pregnant", "pregnancy", "trimester",
        "ivf", "postpartum", "miscarriage", "sober", "sobriety", "in recovery", "addiction", "alcoholic",
        "deaf", "legally blind", "i'm blind", "blind in", "wheelchair", "power chair", "mobility", "disability", "disabled", "amputee",
        "prosthetic", "hearing aid", "hearing aids", "hard of hearing", "insomnia", "sleep apnea", "apnea",
        "anemia", "anemic", "gallbladder", "colorblind", "color blind", "phobia", "fear of", "afraid of",
        "seasick", "carsick", "motion sickness", "crutches", "breastfeeding", "nephrologist", "oncologist",
        "psychiatrist", "pediatrician", "surgeon", "cardiologist", "dermatologist", "neurologist", "allergist", "physical therapy", "back pain", "bad knee", "bad back", "raynaud's",
        "me/cfs", "chronic fatigue", "immunocompromised", "stroke",
    }),
    # medicines taken for a while
    "medication": frozenset({
        "prescribed", "insulin", "inhaler",
        "antidepressant", "antidepressants", "dosage", "steroids", "blood thinner", "blood thinners",
        "birth control", "epipen", "cpap", "warfarin", "metformin", "statin", "lithium", "ssri", "maoi",
    }),
    # what a person eats and drinks, and cannot
    "diet": frozenset({
        "allergic", "allergy", "allergies", "intolerant", "intolerance", "anaphylaxis", "anaphylactic", "vegan",
        "vegetarian", "pescatarian", "keto", "paleo", "kosher", "halal", "gluten", "gluten-free", "dairy-free",
        "lactose", "peanut", "peanuts", "tree nuts", "shellfish", "low-sodium", "low-fodmap", "teetotal",
        "teetotaler", "don't drink", "do not drink", "don't eat", "do not eat", "can't eat", "cannot eat",
        "never eat", "diet",
    }),
    # faith and practice
    "religion": frozenset({
        "muslim", "jewish", "christian", "catholic", "hindu", "sikh", "buddhist", "mormon", "orthodox",
        "religious", "faith", "sabbath", "shabbat", "ramadan", "lent", "church", "mosque", "synagogue",
        "temple", "adventist", "adventists", "jehovah's", "atheist", "agnostic", "quaker",
    }),
    # the household: who depends on whom
    "family": frozenset({
        "newborn", "twins", "stepson", "stepdaughter", "caregiver", "daycare", "i'm engaged", "we're engaged",
        "got engaged", "i'm married", "we're married", "got married", "widowed", "widower", "separated",
        "divorced", "single parent", "single mom", "single dad", "baby boy", "baby girl", "expecting a baby",
        "my kids", "our kids", "my children", "our children", "custody of", "broke up", "split up",
    }),
    # animals in a person's care
    "pets": frozenset({
        "backyard chickens", "hens", "goats", "livestock", "rescue dog", "rescue cat",
    }),
    # where and how a person lives
    "home": frozenset({
        "i live", "we live", "i've lived", "we've lived", "renter", "renting", "landlord", "lease", "mortgage",
        "homeowner", "suburbs", "car-free", "walk-up", "i'm based in", "we're based in",
        "studio apartment", "well water", "septic", "first house", "first home", "bought a house", "we moved", "i moved",
        "moved to", "relocated",
    }),
    # a job and its rules
    "work": frozenset({
        "employer", "nda", "security clearance", "union", "night shift", "night shifts", "on call", "on-call",
        "freelance", "freelancer", "self-employed", "compliance", "it approval", "banned", "prohibited",
        "pinned to", "locked down", "air-gapped", "work laptop", "work from home", "remote job",
        "admin rights", "not allowed", "switched jobs", "changed jobs", "new job", "i work as", "i work at", "i work for", "i work in", "i'm employed",
    }),
    # money owed, earned, left
    "money": frozenset({
        "debt", "debts", "debt-free", "loan", "loans", "mortgage", "credit score", "bankrupt", "bankruptcy",
        "on a budget", "tight budget", "strict budget", "limited budget", "fixed budget", "money's tight",
        "money is tight", "income", "paycheck", "inheritance", "inherited", "alimony",
        "child support", "pension", "retired", "retirement", "unemployed", "laid off",
        "tuition", "single-income", "fixed income", "student loans", "paycheck to paycheck",
    }),
    # status before the law
    "legal": frozenset({
        "visa", "h-1b", "h1b", "green card", "citizen", "citizenship", "immigrant", "immigration status", "daca",
        "asylum", "refugee", "permanent resident", "residency", "probation", "parole", "dui", "dwi",
        "lawsuit", "custody", "criminal record", "felony", "hatch act", "lawyer says",
        "restraining order", "work permit",
    }),
    # what a person keeps doing, has committed to
    "commitment": frozenset({
        "training for", "marathon", "rec league", "in a league", "my league", "our league", "volunteer",
        "volunteering", "non-negotiable", "committed to", "semester", "choir", "orchestra", "signed up for",
    }),
    # what a person holds to, and has learned
    "values": frozenset({
        "my values", "on principle", "my principles", "i refuse", "hard lesson", "lesson learned",
        "learned my lesson", "learned the hard way", "i learned that", "i've learned that", "taught me to",
        "taught me that", "after learning", "since learning", "boundaries", "ethical", "boycott",
        "conscience", "pacifist", "never again",
    }),
}
# fmt: on
"""The words of a person's lasting facts, by domain (:mod:`refind.standing`): a first-person sentence holding
one of them, with no sign of being passing, is read as a standing fact of that domain. A word may be two or three
(a phrase is matched whole; "my sister", not "sister", where the bare word is too often someone else's). Words
too common in requests to say anything lasting ("heart", "house", "team", "practice") are left out. When a
sentence holds words of several domains the first domain in this order wins."""

# fmt: off
FACT_OWNED: dict[str, frozenset[str]] = {
    "health": frozenset({
        "doctor", "psychiatrist", "therapist", "pediatrician", "surgeon", "cardiologist", "dermatologist",
        "neurologist", "allergist", "physio", "condition", "diagnosis", "knee", "knees", "back", "hip", "heart",
        "kidneys", "liver", "lungs", "eyesight", "hearing",
    }),
    "medication": frozenset({"meds", "medication", "medications", "prescription", "inhaler", "dose"}),
    "diet": frozenset({"diet", "allergy", "allergies"}),
    "family": frozenset({
        "wife", "husband", "spouse", "partner", "fiance", "fiancee", "fiancé", "fiancée", "son", "sons",
        "daughter", "daughters", "kid", "kids", "child", "children", "toddler", "baby", "infant", "teenager",
        "teen", "twins", "oldest", "youngest", "ex", "boyfriend", "girlfriend", "nanny", "stepson", "stepdaughter",
    }),
    "pets": frozenset({
        "dog", "dogs", "cat", "cats", "puppy", "kitten", "pet", "pets", "rabbit", "parrot", "horse", "horses",
        "hamster", "chickens", "tortoise",
    }),
    "home": frozenset({
        "house", "home", "apartment", "flat", "condo", "studio", "landlord", "lease", "neighborhood",
        "neighbourhood", "roommate", "roommates", "town",
    }),
    "work": frozenset({
        "job", "employer", "company", "boss", "manager", "firm", "workplace", "contract", "codebase", "servers",
        "shift", "shifts",
    }),
    "money": frozenset({"debt", "debts", "loans", "savings", "budget", "income", "salary", "pension"}),
    "legal": frozenset({"visa", "status", "lawyer", "attorney", "record", "passport", "case", "probation officer"}),
    "religion": frozenset({"faith", "religion", "church", "mosque", "synagogue", "temple", "congregation"}),
    "commitment": frozenset({"training", "league", "club", "degree", "studies"}),
    "values": frozenset({"values", "principles", "beliefs", "rule", "rules"}),
}
# fmt: on
"""Nouns that say something lasting only when they are the person's own ("my son", "our landlord", "my
employer", "my dog"), by domain: read after ``my`` / ``our`` (and at most one more word: "my oldest son", "our
8-year-old"), not alone ("a dog", "the baby shower", "my friend's dog")."""

CONSEQUENTIAL_DOMAINS = ("health", "medication", "diet", "family", "legal", "money", "work", "religion")
"""The domains whose standing facts a search offers first when none shares a word with the question: health and
medicines, diet and allergies, the household (pregnancy, children), legal status, money, work rules, faith."""

FACT_FIRST_PERSON = frozenset(
    {
        "i",
        "i'm",
        "im",
        "i've",
        "i'd",
        "i'll",
        "me",
        "my",
        "mine",
        "myself",
        "we",
        "we're",
        "we've",
        "we'd",
        "our",
        "ours",
        "ourselves",
        "us",
    }
)
"""A sentence about the person (or their household): it names them in the first person (one of these words,
lowercased, with a plain apostrophe)."""

_LEAD = r"^\W*(?:(?:also|and|but|so|oh|btw|fyi|well|actually|honestly|ok|okay)\b[,:\s]*)*"
_NUMBER = r"(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen)"

FACT_FRAMES: dict[str, re.Pattern[str]] = {
    # a medicine taken: "I'm on lisinopril", "I'm on an MAOI", "I take X every morning"
    "medication": re.compile(
        r"\b(?:i(?:'m|’m|\s+am)|i(?:'ve|’ve|\s+have)\s+been)\s+(?:(?:now|still|currently)\s+)?on\s+(?:an?\s+)?"
        r"[a-z]+(?:in|ol|ide|pam|pril|statin|mab|ine|one|ate|azole|sartan|zac|ax|an|il)\b"
        r"|\bi\s+take\s+(?:\w+\s+){1,4}?(?:daily|every\s+(?:day|morning|night|evening)|twice\s+a\s+day|at\s+night)\b",
        re.I,
    ),
    # a rule kept about food and drink: "I can't have gluten", "I don't eat beef"
    "diet": re.compile(
        r"\bi\s+(?:can't|can’t|cannot|can\s+not|don't|don’t|do\s+not|never)\s+(?:eat|drink)\b",
        re.I,
    ),
    # the household's ages: "our 8-year-old", "my son is 4", "my 4-month-old"
    "family": re.compile(
        rf"\b(?:my|our)\s+(?:[\w-]+\s+)?{_NUMBER}[- ](?:year|month|week)s?[- ]old\b"
        rf"|\b(?:son|daughter|kid|child|baby|toddler|boy|girl)\s+is\s+(?:only\s+|just\s+)?{_NUMBER}\b"
        rf"|\b(?:i|we)\s+have\s+(?:a|an|{_NUMBER})\s+(?:[\w-]+\s+)?(?:kids?|children|sons?|daughters?|stepkids|grandkids)\b",
        re.I,
    ),
    # animals kept: "we have two cats", "I have a rescue greyhound"
    "pets": re.compile(
        rf"\b(?:i|we)\s+(?:(?:just|finally)\s+)?(?:have|own|keep|adopted|rescued|fostered)\s+(?:a|an|{_NUMBER})\s+"
        r"(?:[\w-]+\s+){0,2}?(?:dogs?|cats?|pupp(?:y|ies)|kittens?|rabbits?|parrots?|horses?|hamsters?|greyhounds?|"
        r"retrievers?|terriers?|mutt|shepherds?|labradors?|beagles?|poodles?|huskies|husky|collies?|corgis?|pugs?|"
        r"spaniels?|tabby|tabbies)\b",
        re.I,
    ),
    # a job: "I'm a nurse", "I work nights", "I work as a contractor"
    "work": re.compile(
        r"\b(?:i(?:'m|’m|\s+am)|as)\s+(?:a|an)\s+(?:[\w-]+\s+){0,2}?(?:nurse|doctor|pilot|paramedic|chef|cook|"
        r"firefighter|police\s+officer|cop|soldier|veteran|student|professor|lawyer|attorney|accountant|"
        r"consultant|auditor|analyst|engineer|developer|programmer|designer|teacher|contractor|employee|"
        r"freelancer|pharmacist|dentist|vet|veterinarian|scientist|researcher|journalist|farmer|electrician|"
        r"plumber|mechanic|carpenter|caregiver|stay-at-home\s+\w+)\b"
        r"|\bi\s+work\s+(?:nights|weekends|remotely|from\s+home|two\s+jobs)\b",
        re.I,
    ),
    # a routine kept: "every Saturday", "on Wednesday nights", "I've been running since 2015"
    "commitment": re.compile(
        r"\bevery\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|weekend)\b"
        r"|\bon\s+(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\s+(?:nights|mornings|evenings|afternoons)\b"
        r"|\bi(?:'ve|’ve|\s+have)\s+been\s+\w+ing\s+(?:\w+\s+){0,3}?since\s+(?:19|20)\d\d\b",
        re.I,
    ),
    # who a person is and what they hold to: "I'm a pacifist.", "I'm a DACA recipient.", "I won't fly"
    "values": re.compile(
        _LEAD
        + r"i(?:'m|’m|\s+am)\s+(?:a|an)\s+(?!(?:bit|little|lot|big|huge|total|fan|bit|good|great|quick)\b)"
        r"(?:[\w-]+\s+){0,3}?[\w-]+(?:er|ist|ian|or|ant|ent|ee|ic)\b"
        r"|\bi\s+(?:won't|won’t|will\s+not|refuse\s+to)\s+\w+",
        re.I,
    ),
    # where a person lives: "we're in Minneapolis", "I'm in Perth" (the place capitalised)
    "home": re.compile(
        r"\b(?:[Ii](?:'m|’m|\s+am)|[Ww]e(?:'re|’re|\s+are))\s+(?:now\s+)?(?:living\s+|based\s+|located\s+)?in\s+[A-Z][a-z]+"
    ),
}
"""Shapes of a lasting statement whatever its words, by the domain they state: a medicine taken ("I'm on
…statin", "I take X every morning"), a rule about food ("I can't eat …", "I don't drink …"), the household's ages
("our 8-year-old", "my son is 4"), a job ("I'm a nurse", "I work nights"), a routine kept ("every Saturday", "on
Wednesday nights", "I've been running since 2015"), an identity or refusal ("I'm a pacifist", "I'm a DACA
recipient", "I won't fly"), a place lived in ("we're in Minneapolis": a capital letter)."""

# fmt: off
FACT_FRAME_GATES: dict[str, frozenset[str]] = {
    "medication": frozenset({"on", "take"}),
    "diet": frozenset({"eat", "drink"}),
    "family": frozenset({"is", "old", "kids", "kid", "children", "sons", "daughters", "son", "daughter", "stepkids",
                         "grandkids"}),
    "pets": frozenset({
        "dog", "dogs", "cat", "cats", "puppy", "puppies", "kitten", "kittens", "rabbit", "rabbits", "parrot",
        "parrots", "horse", "horses", "hamster", "hamsters", "greyhound", "greyhounds", "retriever", "retrievers",
        "terrier", "terriers", "mutt", "shepherd", "shepherds", "labrador", "labradors", "beagle", "beagles",
        "poodle", "poodles", "husky", "huskies", "collie", "collies", "corgi", "corgis", "pug", "pugs", "spaniel",
        "spaniels", "tabby", "tabbies",
    }),
    "work": frozenset({"a", "an", "work"}),
    "commitment": frozenset({
        "every", "since", "nights", "mornings", "evenings", "afternoons",
    }),
    "values": frozenset({"a", "an", "won't", "will", "refuse"}),
    "home": frozenset({"in"}),
}
FACT_GATE_WORDS = frozenset({
    "take", "eat", "drink", "won't", "refuse", "nights", "mornings", "evenings", "afternoons", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "kids", "kid", "children",
    "sons", "daughters", "son", "daughter", "dog", "dogs", "cat", "cats", "puppy", "puppies", "kitten",
    "kittens", "rabbits", "parrots", "horses", "greyhound", "greyhounds", "adopted", "rescued", "fostered",
})
FACT_GATE_PHRASES = frozenset({
    "i'm on ", "i am on ", "been on ", "-old", "year old", "years old", "months old", "i'm a", "i am a", "as a ",
    "as an ", "i work ", "since 19", "since 20", "i'm in ", "we're in ", "i am in ", "we are in ", "living in ",
    "based in ", "located in ", "every weekend", "now in ",
})
# fmt: on
"""The frames' gates (the rule's cost at write time): a frame of :data:`FACT_FRAMES` is tried on a sentence
only when the sentence holds one of its ``FACT_FRAME_GATES`` words (an age, "8-year-old", counts as "old"),
and a message is read for facts at all only when it holds a domain word, an owned noun, one of
``FACT_GATE_WORDS`` or (in its lowercased text) one of ``FACT_GATE_PHRASES``."""

FACT_TRANSIENT = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|this\s+(?:morning|afternoon|evening|weekend)|last\s+night|"
    r"next\s+(?:week|weekend|month)|later\s+today|just\s+now|in\s+(?:a\s+few|ten|twenty|\d+)\s+minutes|about\s+to|"
    r"on\s+my\s+way|so\s+(?:tired|sleepy|hungry|bored)|tired|sleepy|hungry|starving|bored|freezing|exhausted|"
    r"before\s+my\s+(?:train|flight|meeting)|in\s+the\s+mood|hold\s+on|"
    r"i\s+have\s+(?:a|one|two|some)\s+(?:quick\s+)?(?:question|meeting|appointment|call|minute|hour)|"
    r"i(?:'m|’m|\s+am)\s+(?:typing|listening|watching|reading|writing|sitting|waiting|at\s+the|halfway|stuck))\b",
    re.I,
)
"""Signs that a first-person sentence is passing, not lasting: a day ("today", "tonight", "tomorrow", "next
week"), a feeling of the moment ("so tired", "hungry"), an errand ("I have a meeting in ten minutes"), what one is
doing now ("I'm typing this on my phone"). A sentence that also says a fact changed ("we are officially
debt-free", "the surgeon cleared me today") is not passing: :data:`FACT_CHANGE` outranks these."""

FACT_MOMENT = re.compile(
    r"\b(?:right\s+now|at\s+the\s+moment|currently|for\s+now|recently|the\s+other\s+day|just\s+got\s+back|"
    r"last\s+(?:week|weekend|month|monday|tuesday|wednesday|thursday|friday|saturday|sunday)|"
    r"(?:\d+|a\s+few|a\s+couple\s+of|two|three)\s+(?:days|weeks)\s+ago)\b",
    re.I,
)
""""Right now", "at the moment", "recently", "last weekend": passing for what one is doing or just did ("I'm at
the library right now", "I took my grandma to the park last Sunday"), not for a state ("I'm on isotretinoin right
now", "I was recently diagnosed with celiac"): these mark a sentence passing only when it holds no word of
:data:`FACT_STATE_DOMAINS`."""

FACT_STATE_DOMAINS = frozenset({"health", "medication", "diet", "legal"})
"""The domains whose words name a state that lasts whenever it is said (a condition, a medicine, a diet, a
legal status): a sentence with one stands though it says "right now" or "recently" (:data:`FACT_MOMENT`)."""

FACT_INTENT = re.compile(
    r"\b(?:i(?:'m|’m|\s+am|\s+was|'ve\s+been|’ve\s+been|\s+have\s+been)\s+(?:\w+ly\s+|also\s+|just\s+|still\s+)?"
    r"(?:thinking|planning|looking|considering|wondering|meaning|hoping|interested|curious|excited|going\s+to|"
    r"trying\s+to\s+(?:find|figure|decide|get|come\s+up|choose|pick|learn|understand|write|make|plan)|"
    r"working\s+on|putting\s+together|preparing)|i(?:'d|’d|\s+would)\s+(?:love|like|appreciate)|"
    r"i\s+(?:also\s+|really\s+|just\s+|still\s+|actually\s+)?(?:want|wanna|need\s+(?:to|a|an|some|help|ideas|advice|your)|"
    r"wonder|plan|hope|was\s+hoping)\b|having\s+(?:some\s+|a\s+few\s+)?(?:trouble|issues|problems|difficulty)\b|"
    r"i\s+was\s+(?:thinking|wondering|hoping)|i'll\b|i’ll\b|i\s+will\b|let\s+me\b|let's\b|"
    r"i(?:'ve|’ve|\s+have)\s+(?:had|been\s+having)\s+(?:some|a\s+few|great|good|bad)\b|"
    r"(?:can|could|would|will)\s+you\b|help\s+me\b|any\s+(?:tips|ideas|suggestions|advice|recommendations)\b|"
    r"need\s+you\s+to\b|i\s+have\s+(?:a|one|two|some|a\s+few|a\s+couple\s+of|few|several)\s+(?:quick\s+|more\s+)?questions?\b)",
    re.I,
)
"""Signs that a first-person sentence asks or plans rather than states what lasts: "I'm thinking of…", "I'd love
to…", "I want…", "I need ideas", "I'll…", "could you…" (a request in the first person), "any tips", "I need you
to…", "I have a question about…"."""

FACT_REQUEST_OPENING = re.compile(
    r"^\W*(?:(?:ok(?:ay)?|so|hi|hey|now|also|and|please)\W+)*(?:please\s+)?"
    r"(?:give|tell|show|send|write|list|suggest|recommend|generate|create|draft|compose|describe|explain|"
    r"summari[sz]e|translate|rewrite|name)\s+(?:me\b|us\b|a\b|an\b|some\b|the\b|\d|more\b|ideas\b)",
    re.I,
)
"""A sentence that opens by asking for something ("Give me some names for a baby girl", "Write a toast for my
sister's wedding", "List five gifts for my dad"): a request, not a statement, though it names the person and a
domain; it stands only with a statement of its own in it (:data:`FACT_STATEMENT`: "Give me snack ideas, I'm
type 1 diabetic")."""

FACT_STATEMENT = re.compile(
    r"\b(?:i(?:'m|’m|\s+am|'ve|’ve|\s+have|\s+was)|we(?:'re|’re|\s+are|'ve|’ve|\s+have)|"
    r"(?:my|our)\s+\w+(?:\s+\w+)?\s+(?:is|are|has|have|was|were))\b",
    re.I,
)
"""A statement about the person inside a request sentence ("…, I'm type 1 diabetic", "…; my son is allergic to
eggs")."""

FACT_QUESTION_START = frozenset(
    {
        "what",
        "what's",
        "how",
        "how's",
        "why",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "can",
        "could",
        "would",
        "should",
        "shall",
        "will",
        "do",
        "does",
        "did",
        "is",
        "are",
        "am",
        "was",
        "were",
        "have",
        "has",
        "any",
        "anyone",
        "anybody",
        "may",
        "might",
        "isn't",
        "aren't",
        "doesn't",
        "didn't",
        "wouldn't",
        "shouldn't",
        "couldn't",
    }
)
"""A sentence that opens as a question (its first word one of these), whether or not it ends with "?"."""

FACT_HYPOTHETICAL = re.compile(
    r"\b(?:if\s+i|if\s+we|if\s+my|what\s+if|suppose|supposing|imagine|hypothetically|let's\s+say|say\s+i|"
    r"would\s+it|in\s+a\s+story|my\s+character|the\s+character|in\s+my\s+novel|in\s+my\s+story|"
    r"role-?play|pretend)\b",
    re.I,
)
"""A sentence about what is not the case: a supposition, a story, a character."""

FACT_CHANGE = re.compile(
    r"\b(?:no\s+longer|not\s+anymore|any\s*more|moved\s+to|we\s+moved|i\s+moved|quit|stopped|gave\s+up|"
    r"turned\s+out|turns\s+out|cleared|approved|paid\s+off|debt-free|officially|switched|"
    r"i(?:'m|’m|\s+am)\s+now|we(?:'re|’re|\s+are)\s+now|now\s+(?:a|an|in|on)|false\s+alarm|broke\s+up|"
    r"called\s+off|is\s+off|was\s+born|arrived|adopted|rescued|closed\s+on|got\s+(?:married|engaged|divorced|hired|"
    r"laid\s+off|fired|promoted)|new\s+job|started\s+at|retired|out\s+of\s+the)\b",
    re.I,
)
"""Words that say a standing fact changed ("no longer", "turns out", "switched", "we're now in", "cleared", "was
born", "broke up"): a later fact with them supersedes an earlier one of its domain, and a sentence holding them
with a domain word is a fact even when it says when it happened ("cleared me today")."""


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
    "standing_preference": STANDING_PREFERENCE,
    "standing_gate": STANDING_GATE,
    "standing_gate_phrases": STANDING_GATE_PHRASES,
    "standing_start_words": STANDING_START_WORDS,
    "standing_start_gate": STANDING_START_GATE,
    "standing_lead_words": STANDING_LEAD_WORDS,
    "request": REQUEST_CUES,
    "stem_stop": STEM_STOP_WORDS,
    **{f"fact_{name}": words for name, words in FACT_DOMAINS.items()},
    **{f"fact_owned_{name}": words for name, words in FACT_OWNED.items()},
    **{f"fact_frame_{name}": frame for name, frame in FACT_FRAMES.items()},
    **{f"fact_frame_gate_{name}": words for name, words in FACT_FRAME_GATES.items()},
    "fact_gate_words": FACT_GATE_WORDS,
    "fact_gate_phrases": FACT_GATE_PHRASES,
    "fact_first_person": FACT_FIRST_PERSON,
    "fact_transient": FACT_TRANSIENT,
    "fact_moment": FACT_MOMENT,
    "fact_state_domains": FACT_STATE_DOMAINS,
    "fact_question_start": FACT_QUESTION_START,
    "fact_hypothetical": FACT_HYPOTHETICAL,
    "fact_intent": FACT_INTENT,
    "fact_request_opening": FACT_REQUEST_OPENING,
    "fact_statement": FACT_STATEMENT,
    "fact_change": FACT_CHANGE,
}
"""Every list and pattern, by name."""


def word_list(name: str) -> frozenset[str] | re.Pattern[str] | str:
    """The list or pattern called ``name`` (:data:`LISTS`); a ``KeyError`` names the known ones."""
    try:
        return LISTS[name]
    except KeyError:
        raise KeyError(f"no word list {name!r}; known: {', '.join(sorted(LISTS))}") from None
